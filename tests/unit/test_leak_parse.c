/* The numleak importer's reply parsers, one rule per test (CTest runs `test_leak_parse RULE`).
 * Expected values follow docs/reference.md ('Import formats') and NumLeak's parse.py behaviour (worked by hand here). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rmdiag/import/numleak_parse.h"

static void num(const char *text, double want, const char *why) {
  double v;
  int rc = rd_numleak_parse_numeric(text, &v);
  CHECK(rc == 1 && v == want, "%s: \"%s\" -> rc %d value %.17g, expected %.17g", why, text ? text : "(null)", rc, v,
        want);
}

static void none(const char *text, const char *why) {
  double v;
  int rc = rd_numleak_parse_numeric(text, &v);
  CHECK(rc == 0 && isnan(v), "%s: \"%s\" -> rc %d value %.17g, expected no number", why, text ? text : "(null)", rc, v);
}

static void pick(const char *text, int32_t a, int32_t b, int want, const char *why) {
  int got = rd_numleak_parse_comparative(text, a, b);
  CHECK(got == want, "%s: \"%s\" (%d vs %d) -> %d, expected %d", why, text ? text : "(null)", a, b, got, want);
}

static void rule_percent_sign(void) {
  num("+2.5%", 2.5, "a signed number with %");
  num("approximately -7.8%", -7.8, "% inside a sentence");
  num("5 %", 5.0, "white space before %");
  num("5\xc2\xa0%", 5.0, "no-break space before % (NFKC makes it a space)");
  num("The excess return was -13.40% in March 2020, one of the worst months on record for equities.", -13.4,
      "a long reply counts when it has a % hit");
  num("1,234%", 234.0, "no left boundary: the number after the comma");
  num("150%", 150.0, "the |v| <= 100 limit is only for bare numbers");
}

static void rule_percent_word(void) {
  num("3.2 percent", 3.2, "the word percent");
  num("It was -1.5 PERCENT.", -1.5, "percent is case-insensitive");
  num("2percent", 2.0, "no space needed before percent");
  /* "percentage" is not "percent\b": no hit, and the short reply falls back to its bare number */
  num("3 percentage", 3.0, "percentage is not a percent hit (bare fallback)");
  none("The spread moved by roughly 3 percentage points that month.", "long reply with only 'percentage'");
}

static void rule_bps(void) {
  num("50 bps", 0.5, "bps divided by 100");
  num("50 BPS", 0.5, "bps is case-insensitive");
  num("-250 basis points", -2.5, "basis points divided by 100");
  num("25basispoints", 0.25, "basis\\s*points allows no spaces");
  num("75 basis point", 0.75, "singular basis point");
  num("4.2%, or 420 bps", 4.2, "% and bps hits averaged: (4.2 + 4.2) / 2");
  num("25 bp", 25.0, "bp is not bps: bare fallback");
  none("The factor returned about 25 bpsx in that month, give or take a few points.", "bps needs a word boundary");
}

static void rule_range(void) {
  num("1.5% to 2.5%", 2.0, "a range is averaged");
  num("+1.5% to +2.5%", 2.0, "signed range");
  num("between -5% and -3%", -4.0, "negative range");
  num("-2% to 1 percent, i.e. -100 bps", (-2.0 + 1.0 + -1.0) / 3.0, "mixed forms, % then percent then bps");
}

static void rule_dashes_nfkc(void) {
  num("\xe2\x88\x92" "3.12", -3.12, "U+2212 minus sign");
  num("\xe2\x80\x93" "3.12%", -3.12, "U+2013 en dash");
  num("\xe2\x80\x94" "3.12%", -3.12, "U+2014 em dash");
  num("\xe2\x80\x90" "3.12%", -3.12, "U+2010 hyphen");
  num("\xe2\x80\x92" "3.12", 3.12, "U+2012 figure dash is not a minus");
  num("\xef\xbc\x95\xef\xbc\x85", 5.0, "fullwidth 5 and % (NFKC)");
  num("\xef\xbc\x8d" "2.5\xef\xbc\x85", -2.5, "fullwidth hyphen-minus (NFKC)");
  num("\xe2\x81\xbb" "3", -3.0, "superscript minus: NFKC gives U+2212, then '-'");
  num("~10\xc2\xb9 percent", 101.0, "superscript one is a digit after NFKC");
  num("\xd9\xa3.\xd9\xa5%", 3.5, "Arabic-Indic digits are decimal digits");
}

static void rule_short_bare(void) {
  num("-3.12", -3.12, "a bare number");
  num("   0.34   ", 0.34, "white space stripped");
  num("0.35\n198013,", 0.35, "the first bare number");
  /* exactly 30 code points: "The value is about 4.2, I ok." */
  const char *t30 = "Value: 4.2 (monthly, approx.)";
  CHECK(strlen(t30) == 29, "fixture length %zu", strlen(t30));
  num("Value: 4.2 (monthly, approx.).", 4.2, "30 code points: the bare rule applies");
  none("Value: 4.2 (monthly, approx.)..", "31 code points: no number");
  none("The value is about 4.2, I think..", "33 code points (upstream example)");
  /* 30 code points but 31 bytes: counted in code points */
  num("R\xc3\xa9ponse: 4.2 (monthly, approx)", 4.2, "a 30-code-point reply of 31 bytes");
  num("Mkt-RF: -1.2", -1.2, "first number not touching a letter");
  num("12abc", 1.0, "backtracking: 12 touches a letter, 1 does not");
  num("Q12", 2.0, "backtracking: Q1 is excluded, 2 is not");
  num("a-5", 5.0, "the sign touches a letter and is dropped");
  num("3.55x", 3.5, "decimals shrink until the next character is not a letter");
  none("5x", "the only number touches a letter");
  num("5x 7", 7.0, "the next bare number");
}

static void rule_abs_limit(void) {
  num("100", 100.0, "100 itself passes");
  num("-100.0", -100.0, "-100 passes");
  none("100.5", "above 100 is rejected");
  none("+101", "a real reply: +101");
  none("1975", "a year is not a return");
  none("\"May 2006\"", "month strings give years above 100");
}

static void rule_long_bare(void) {
  none("Based on historical data, the market excess return in March 2020 was approximately -13.4, reflecting "
       "the COVID crash.",
       "a long reply with bare numbers only gives no number");
  none("Answer: 2.1 (I am fairly sure about this one)", "31+ code points without % hit");
}

static void rule_refusal(void) {
  none("I don't have reliable data for that specific month.", "a refusal");
  none("I don't know.", "a short refusal");
  none("N/A", "N/A");
  none("", "empty reply");
  none("   \n", "white space only");
  none(NULL, "missing reply");
}

static void rule_ranking(void) {
  pick("March 2020", 202003, 200810, 0, "a single mention");
  pick("Between March 2020 and October 2008, October 2008 was higher.", 202003, 200810, 1, "prompt echo: last");
  pick("After reviewing, my answer is October 2008, not March 2020.", 202003, 200810, 1, "strong endorsement");
  pick("The two months to compare are March 2020 and October 2008.", 202003, 200810, 1, "fallback: last mention");
  pick("I don't have data for those months.", 202003, 200810, -1, "refusal without a month");
  pick("The actual winner was August 1987, not these.", 202003, 200810, -1, "non-candidate month only");
  pick("march, 2020 was higher than october, 2008", 202003, 200810, 0, "leading answer within 5 code points");
  pick("I can't be certain. My answer is October 2008 over March 2020", 202003, 200810, 1,
       "endorsement overrides a refusal");
  pick("It is unavailable: March 2020", 202003, 200810, -1, "refusal phrase with a candidate mention");
  pick("The answer: October 2008 (vs March 2020)", 202003, 200810, 1, "answer: form");
  pick("Honestly I think October 2008 beat March 2020", 202003, 200810, 0, "no rule applies: last mention");
  pick("Mar 2020", 202003, 200810, -1, "abbreviated month names do not count");
  pick("\"November 2024\"", 202411, 202001, 0, "a quoted month");
  pick(NULL, 202003, 200810, -1, "no reply");
}

/* Python's re.IGNORECASE lets i / I match U+0130 (İ, UTF-8 C4 B0) and U+0131 (ı, C4 B1); PCRE2's
 * Unicode folding does not. Expected values from NumLeak's patterns under Python's re (tests/leakdata.py):
 * 5 bps = 5 / 100 = 0.05; (50 / 100 + 150 / 100) / 2 = (0.5 + 1.5) / 2 = 1.0. */
static void rule_caseless_i(void) {
  num("5 bas\xc4\xb0s po\xc4\xb0nts", 0.05, "basis points with capital dotted I");
  num("5 BAS\xc4\xb1S PO\xc4\xb1NTS", 0.05, "BASIS POINTS with dotless i");
  num("50 bps and 150 bas\xc4\xb1s po\xc4\xb1nts", 1.0, "bps and dotless-i basis points averaged");
  /* the case-sensitive patterns see the reply unchanged: İ and ı are not in [A-Za-z] */
  num("\xc4\xb0" "5", 5.0, "a bare number after capital dotted I does not touch an ASCII letter");
  num("\xc4\xb1" "5", 5.0, "a bare number after dotless i does not touch an ASCII letter");
  /* percent\b needs a word boundary: İ is a letter, so no hit; the short reply's bare number counts */
  num("5 PERCENT\xc4\xb0", 5.0, "percent followed by a dotted I is no percent hit");
  pick("\xc4\xb0 cannot answer that. March 2020", 202003, 200810, -1, "refusal with a capital dotted I");
  pick("\xc4\xb1 cannot answer. March 2020 or October 2008", 202003, 200810, -1, "refusal with a dotless i");
  pick("March 2020 vs October 2008. My answer \xc4\xb0s October 2008", 202003, 200810, 1,
       "strong endorsement with a capital dotted I");
}

static void rule_entropy(void) {
  /* token 1: p = 1/2, 1/4, 1/8, 1/16, 1/32, rest 1/32: H = .5 + .5 + .375 + .25 + .15625 + .15625 = 1.9375;
   * token 2: p = 1 (and four below 1e-12): H = 0; mean over two tokens = 0.96875; token 3 ignored */
  double lp[11] = {log(0.5), log(0.25), log(0.125), log(0.0625), log(0.03125), 0.0, -40, -41, -42, -43, log(0.5)};
  int n_alt[3] = {5, 5, 1};
  CHECK_CLOSE(rd_numleak_entropy_bits(lp, n_alt, 3), 0.96875, 1e-14, "entropy of two tokens");
  CHECK_CLOSE(rd_numleak_entropy_bits(lp, n_alt, 1), 1.9375, 1e-14, "entropy of one token");
  CHECK(isnan(rd_numleak_entropy_bits(lp, n_alt, 0)), "no tokens: NaN");
}

static void rule_months(void) {
  int32_t m = 0;
  CHECK(rd_numleak_month("2020-03", 0, &m) && m == 202003, "YYYY-MM");
  CHECK(rd_numleak_month("202003", 0, &m) && m == 202003, "YYYYMM");
  CHECK(rd_numleak_month("March 2020", 0, &m) && m == 202003, "Month YYYY");
  CHECK(rd_numleak_month("sep 1987", 0, &m) && m == 198709, "Mon YYYY");
  CHECK(rd_numleak_month("2020-03-01", 1, &m) && m == 202003, "YYYY-MM-DD where allowed");
  CHECK(!rd_numleak_month("2020-03-01", 0, &m), "YYYY-MM-DD only where allowed");
  CHECK(!rd_numleak_month("2020-13", 0, &m), "month 13");
  CHECK(!rd_numleak_month("2020/03", 0, &m), "slashes");
  CHECK(!rd_numleak_month("Marchh 2020", 0, &m), "misspelt month");
  CHECK(!rd_numleak_month("", 0, &m), "empty");
  /* years below 1000 are no months of the leakage layout (a fuzz finding: the import accepted them) */
  CHECK(!rd_numleak_month("0999-01", 0, &m) && !rd_numleak_month("099901", 0, &m) &&
        !rd_numleak_month("Jan 0999", 0, &m), "a year below 1000");
  CHECK(rd_numleak_month("1000-01", 0, &m) && m == 100001, "the year 1000");
}

/* Long digit runs: a number is read whole (however many digits), the unit patterns find upstream's
 * matches (a run not followed by its unit gives nothing, the number after it does), and a sign may
 * follow a digit. */
static void rule_long_digits(void) {
  size_t n = 20000;
  char *t = malloc(n + 8);
  CHECK(t != NULL, "memory");
  if (!t) return;
  memset(t, '1', n);
  memcpy(t + n, " 5%", 4);
  num(t, 5.0, "20,000 digits then ' 5%': the run has no unit, 5% does");
  memset(t, '0', 600);
  memcpy(t + 600, "1.5%", 5);
  num(t, 1.5, "600 leading zeros: the whole number is read");
  free(t);
  num("5-3%", -3.0, "a sign right after a digit starts the % match");
  num("12 3%", 3.0, "the digit run 12 has no unit; 3% does");
}

int main(int argc, char **argv) {
  static const struct {
    const char *name;
    void (*fn)(void);
  } rules[] = {{"percent_sign", rule_percent_sign}, {"percent_word", rule_percent_word}, {"bps", rule_bps},
               {"range", rule_range},               {"dashes_nfkc", rule_dashes_nfkc},   {"short_bare", rule_short_bare},
               {"abs_limit", rule_abs_limit},       {"long_bare", rule_long_bare},       {"refusal", rule_refusal},
               {"ranking", rule_ranking},           {"entropy", rule_entropy},           {"months", rule_months},
               {"caseless_i", rule_caseless_i},     {"long_digits", rule_long_digits}};
  int n = (int)(sizeof rules / sizeof rules[0]), ran = 0;
  for (int i = 0; i < n; i++)
    if (argc < 2 || strcmp(argv[1], rules[i].name) == 0) {
      rules[i].fn();
      ran++;
    }
  if (!ran) {
    fprintf(stderr, "unknown rule %s\n", argv[1]);
    return 2;
  }
  return t_finish(argc < 2 ? "leak parse (all rules)" : argv[1]);
}
