/* NumLeak's reply parsers (see docs/reference.md, 'numleak'): the numeric parser that turns a model's
 * reply into a number in the series' units, the two-month ranking parser, the first-token entropy and
 * month texts.
 * Normalisation by utf8proc (NFKC), matching by PCRE2 with Python's regular-expression semantics:
 * Unicode digits for \d, Unicode word boundaries, Python's white-space set, backtracking. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <pcre2.h>
#include <utf8proc.h>

#include "rmdiag/import/numleak_parse.h"

/* Python's str.isspace() set, which both str.strip() and \s use (NFKC already turns most of the
 * Zs spaces into U+0020, the others are listed for completeness). */
#define PYS \
  "[\\t\\n\\x{0b}\\f\\r\\x{1c}-\\x{1f} \\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}" \
  "\\x{205f}\\x{3000}]"
#define NUM "[-+]?\\d+(?:\\.\\d+)?"
/* NUM for the unit patterns, never starting inside a run of digits: when the match from the run's
 * first digit fails, a match from a later digit of the run would fail the same way (the first digit
 * can take the same continuation), so the matches are upstream's, found in linear rather than
 * quadratic time on long digit runs. A sign may still follow a digit ("5-3%" gives -3). */
#define NUM_U "(?:[-+]|(?<!\\d))\\d+(?:\\.\\d+)?"
#define MONTHS_ALT "January|February|March|April|May|June|July|August|September|October|November|December"

static int py_space(utf8proc_int32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

enum { RX_PCT, RX_PERCENT, RX_BPS, RX_BARE, RX_MONTH_YEAR, RX_ENDORSE, RX_ECHO, RX_REFUSAL, RX_COUNT };

static const char *const rx_source[RX_COUNT] = {
    [RX_PCT] = "(" NUM_U ")" PYS "*%",
    [RX_PERCENT] = "(" NUM_U ")" PYS "*percent\\b",
    [RX_BPS] = "(" NUM_U ")" PYS "*(?:bps|basis" PYS "*points?)\\b",
    [RX_BARE] = "(?<![A-Za-z])(" NUM ")(?![A-Za-z])",
    [RX_MONTH_YEAR] = "\\b(" MONTHS_ALT ")\\b" PYS "*,?" PYS "*(\\d{4})",
    [RX_ENDORSE] = "(?:my" PYS "+answer" PYS "+is|answer" PYS "*[:\\-]|answer" PYS "+is|i" PYS
                   "+(?:pick|picked|choose|chose|select)|the" PYS "+(?:pick|answer|higher|winner)" PYS
                   "+is|higher" PYS "+return" PYS "+was" PYS "+in|had" PYS "+the" PYS "+higher" PYS "+return" PYS
                   "+in)" PYS "+(" MONTHS_ALT ")" PYS "*,?" PYS "*(\\d{4})",
    [RX_ECHO] = "^" PYS "*(between|comparing|compared" PYS "+to|the" PYS "+two" PYS "+months|of" PYS
                "+(?:the|these)" PYS "+two|of" PYS "+the" PYS "+two" PYS "+months|looking" PYS "+at|considering)\\b",
    [RX_REFUSAL] = "(?:i" PYS "+(?:do" PYS "+not|don['\\x{2019}]?t|cannot|can['\\x{2019}]?t|am" PYS "+not|'m" PYS
                   "+not|don['\\x{2019}]?t" PYS "+have|do" PYS "+not" PYS "+have)" PYS
                   "+(?:access|the|have|know|enough|specific|reliable|sufficient|exact|historical|confident|sure|"
                   "precise|memorized|memoriz|that)"
                   "|no" PYS "+access" PYS "+to"
                   "|unable" PYS "+to"
                   "|not" PYS "+able" PYS "+to"
                   "|don['\\x{2019}]?t" PYS "+have" PYS "+access"
                   "|i" PYS "+don['\\x{2019}]?t" PYS "+have"
                   "|i" PYS "+cannot" PYS "+(?:reliably|determine|provide|recall|answer|give)"
                   "|cannot" PYS "+reliably"
                   "|would" PYS "+require" PYS "+access"
                   "|without" PYS "+access"
                   "|beyond" PYS "+my" PYS "+knowledge"
                   "|outside" PYS "+(?:of" PYS "+)?my" PYS "+training"
                   "|i['\\x{2019}]?m" PYS "+not" PYS "+able"
                   "|i" PYS "+can['\\x{2019}]?t" PYS "+answer"
                   "|i" PYS "+need" PYS "+to" PYS "+be" PYS "+(?:careful|straightforward|honest)"
                   "|cannot" PYS "+provide"
                   "|unavailable"
                   "|not" PYS "+available"
                   ")",
};

/* Only the % pattern and the bare-number pattern are case-sensitive (as upstream compiles them). */
static const int rx_caseless[RX_COUNT] = {[RX_PERCENT] = 1, [RX_BPS] = 1, [RX_MONTH_YEAR] = 1, [RX_ENDORSE] = 1,
                                          [RX_ECHO] = 1, [RX_REFUSAL] = 1};

static pcre2_code *rx_code[RX_COUNT];
static pcre2_match_data *rx_md;

static int rx_init(void) {
  if (rx_md) return 0;
  for (int i = 0; i < RX_COUNT; i++) {
    int errcode;
    PCRE2_SIZE erroff;
    uint32_t flags = PCRE2_UTF | PCRE2_UCP | (rx_caseless[i] ? PCRE2_CASELESS : 0);
    rx_code[i] = pcre2_compile((PCRE2_SPTR)rx_source[i], PCRE2_ZERO_TERMINATED, flags, &errcode, &erroff, NULL);
    if (!rx_code[i]) {
      /* a programming error: the patterns are constants */
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(errcode, msg, sizeof msg);
      fprintf(stderr, "rmdiag: internal error: reply pattern %d does not compile at %zu: %s\n", i, (size_t)erroff,
              (const char *)msg);
      abort();
    }
  }
  rx_md = pcre2_match_data_create(8, NULL);
  return rx_md ? 0 : -1;
}

/* First match of pattern `which` in s[0..len) at or after `start`; fills ov[0..2*groups+1]. */
static int rx_find(int which, const char *s, size_t len, size_t start, size_t *ov, int groups) {
  int rc = pcre2_match(rx_code[which], (PCRE2_SPTR)s, len, start, PCRE2_NO_UTF_CHECK, rx_md, NULL);
  if (rc < 0) return 0;
  PCRE2_SIZE *o = pcre2_get_ovector_pointer(rx_md);
  for (int g = 0; g <= groups; g++) {
    ov[2 * g] = o[2 * g];
    ov[2 * g + 1] = o[2 * g + 1];
  }
  return 1;
}

/* ---- normalisation ------------------------------------------------------------------------- */

char *rd_numleak_normalize(const char *text) {
  if (!text) text = "";
  utf8proc_uint8_t *nf = NULL;
  utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)text, 0, &nf,
                                    UTF8PROC_NULLTERM | UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
  if (n < 0) return NULL;
  /* the four dashes (3 bytes each in UTF-8) become '-' */
  size_t w = 0;
  for (size_t i = 0; i < (size_t)n;) {
    if (nf[i] == 0xE2 && i + 2 < (size_t)n &&
        ((nf[i + 1] == 0x88 && nf[i + 2] == 0x92) ||
         (nf[i + 1] == 0x80 && (nf[i + 2] == 0x93 || nf[i + 2] == 0x94 || nf[i + 2] == 0x90)))) {
      nf[w++] = '-';
      i += 3;
    } else {
      nf[w++] = nf[i++];
    }
  }
  nf[w] = '\0';
  /* strip Python white space at both ends */
  size_t lo = 0, hi = w;
  while (lo < hi) {
    utf8proc_int32_t c;
    utf8proc_ssize_t k = utf8proc_iterate(nf + lo, (utf8proc_ssize_t)(hi - lo), &c);
    if (k <= 0 || !py_space(c)) break;
    lo += (size_t)k;
  }
  while (hi > lo) {
    size_t b = hi - 1;
    while (b > lo && (nf[b] & 0xC0) == 0x80) b--;
    utf8proc_int32_t c;
    utf8proc_ssize_t k = utf8proc_iterate(nf + b, (utf8proc_ssize_t)(hi - b), &c);
    if (k <= 0 || !py_space(c)) break;
    hi = b;
  }
  memmove(nf, nf + lo, hi - lo);
  nf[hi - lo] = '\0';
  return (char *)nf;
}

/* The copy of a normalised reply that the caseless patterns search: Python's re.IGNORECASE lets an
 * ASCII i or I match U+0130 (capital I with dot above) and U+0131 (dotless i), which PCRE2's Unicode
 * case folding does not, so both become 'i' here (NFKC has already folded the other two non-ASCII
 * letters Python matches, U+017F long s and U+212A Kelvin sign, to ASCII). One code point stays one
 * code point, so code-point positions agree with the original; byte offsets refer to the copy. */
static char *caseless_copy(const char *s, size_t len, size_t *out_len) {
  char *c = malloc(len + 1);
  if (!c) return NULL;
  size_t w = 0;
  for (size_t i = 0; i < len;) {
    if ((unsigned char)s[i] == 0xC4 && i + 1 < len &&
        ((unsigned char)s[i + 1] == 0xB0 || (unsigned char)s[i + 1] == 0xB1)) {
      c[w++] = 'i';
      i += 2;
    } else {
      c[w++] = s[i++];
    }
  }
  c[w] = '\0';
  *out_len = w;
  return c;
}

static size_t code_points(const char *s, size_t bytes) {
  size_t n = 0;
  for (size_t i = 0; i < bytes; i++) n += ((unsigned char)s[i] & 0xC0) != 0x80;
  return n;
}

/* Value of a Unicode decimal digit: digits come in runs of ten in code-point order, so the value is
 * the distance from the start of the run of Nd characters, modulo 10. */
static int digit_value(utf8proc_int32_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (utf8proc_category(c) != UTF8PROC_CATEGORY_ND) return -1;
  utf8proc_int32_t z = c;
  while (z > 0 && utf8proc_category(z - 1) == UTF8PROC_CATEGORY_ND) z--;
  return (int)((c - z) % 10);
}

/* The number matched in s[a..b) ([-+]?digits(.digits)?) as a double, as Python's float() reads it. */
static double match_number(const char *s, size_t a, size_t b) {
  char *buf = malloc(b - a + 1);  /* one ASCII byte per code point */
  if (!buf) return NAN;
  size_t w = 0;
  for (size_t i = a; i < b;) {
    utf8proc_int32_t c;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(b - i), &c);
    if (k <= 0) break;
    i += (size_t)k;
    if (c == '-' || c == '+' || c == '.') buf[w++] = (char)c;
    else {
      int d = digit_value(c);
      buf[w++] = (char)('0' + (d < 0 ? 0 : d));
    }
  }
  buf[w] = '\0';
  double v = strtod(buf, NULL);
  free(buf);
  return v;
}

/* ---- numeric parser ---------------------------------------------------------------------------- */

int rd_numleak_parse_numeric(const char *text, double *value) {
  *value = NAN;
  if (!text) return 0;
  if (rx_init() != 0) return -1;
  char *s = rd_numleak_normalize(text);
  if (!s) return -1;
  size_t len = strlen(s);
  if (len == 0) {
    free(s);
    return 0;
  }
  size_t clen = 0;
  char *c = caseless_copy(s, len, &clen);
  if (!c) {
    free(s);
    return -1;
  }
  /* every % hit, then every "percent" hit, then every bps hit / 100, averaged in that order (the
   * caseless word forms search the caseless copy) */
  double sum = 0.0;
  int64_t hits = 0;
  static const int pats[3] = {RX_PCT, RX_PERCENT, RX_BPS};
  for (int p = 0; p < 3; p++) {
    const char *t = rx_caseless[pats[p]] ? c : s;
    size_t tlen = rx_caseless[pats[p]] ? clen : len, pos = 0, ov[4];
    while (pos <= tlen && rx_find(pats[p], t, tlen, pos, ov, 1)) {
      double v = match_number(t, ov[2], ov[3]);
      sum += pats[p] == RX_BPS ? v / 100.0 : v;
      hits++;
      pos = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
    }
  }
  free(c);
  int found = 0;
  if (hits > 0) {
    *value = sum / (double)hits;
    found = 1;
  } else if (code_points(s, len) <= 30) {
    size_t ov[4];
    if (rx_find(RX_BARE, s, len, 0, ov, 1)) {
      double v = match_number(s, ov[2], ov[3]);
      if (fabs(v) <= 100.0) {
        *value = v;
        found = 1;
      }
    }
  }
  free(s);
  return found;
}

/* ---- ranking parser ------------------------------------------------------------------------------- */

/* Month number (1..12) of a matched English month name, by its first three letters. */
static int month_of_name(const char *s, size_t a, size_t b) {
  static const char *const abbr[12] = {"jan", "feb", "mar", "apr", "may", "jun",
                                       "jul", "aug", "sep", "oct", "nov", "dec"};
  if (b - a < 3) return 0;
  char t[4] = {(char)tolower((unsigned char)s[a]), (char)tolower((unsigned char)s[a + 1]),
               (char)tolower((unsigned char)s[a + 2]), 0};
  for (int m = 0; m < 12; m++)
    if (strcmp(t, abbr[m]) == 0) return m + 1;
  return 0;
}

static int32_t year_of(const char *s, size_t a, size_t b) {
  int32_t y = 0;
  int digits = 0;
  for (size_t i = a; i < b && digits < 4;) {
    utf8proc_int32_t c;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(b - i), &c);
    if (k <= 0) break;
    i += (size_t)k;
    int d = digit_value(c);
    if (d < 0) break;
    y = 10 * y + d;
    digits++;
  }
  return y;
}

/* YYYYMM of a month-year match (groups 1 and 2 in ov), or 0 when the month name is unusual. */
static int32_t key_of(const char *s, const size_t *ov) {
  int m = month_of_name(s, ov[2], ov[3]);
  return m ? year_of(s, ov[4], ov[5]) * 100 + m : 0;
}

int rd_numleak_parse_comparative(const char *text, int32_t month_a, int32_t month_b) {
  if (!text) return -1;
  if (rx_init() != 0) return -2;
  char *n = rd_numleak_normalize(text);
  if (!n) return -2;
  /* every pattern here is caseless: all of them search the caseless copy */
  size_t len = 0;
  char *s = caseless_copy(n, strlen(n), &len);
  free(n);
  if (!s) return -2;
  int pick = -1;
  if (len == 0) goto out;
  /* every month-year mention that names a candidate: (start in code points, key) */
  int64_t n_valid = 0, first_valid_cp = -1;
  int32_t first_key = 0, last_key = 0, distinct[2] = {0, 0};
  int n_distinct = 0;
  size_t pos = 0, ov[6];
  while (pos <= len && rx_find(RX_MONTH_YEAR, s, len, pos, ov, 2)) {
    int32_t k = key_of(s, ov);
    if (k != 0 && (k == month_a || k == month_b)) {
      if (n_valid == 0) {
        first_valid_cp = (int64_t)code_points(s, ov[0]);
        first_key = k;
      }
      last_key = k;
      n_valid++;
      if (n_distinct == 0 || (distinct[0] != k && (n_distinct == 1 || distinct[1] != k)))
        if (n_distinct < 2) distinct[n_distinct++] = k;
    }
    pos = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
  }
  if (n_valid == 0) goto out;
  /* a refusal counts unless a strong endorsement (of any month) appears somewhere */
  size_t se[6];
  int has_se = rx_find(RX_ENDORSE, s, len, 0, se, 2);
  size_t rf[2];
  int refused = rx_find(RX_REFUSAL, s, len, 0, rf, 0);
  int32_t pick_key = 0;
  if (refused && !has_se) goto out;
  if (n_distinct == 1) {
    pick_key = distinct[0];
  } else if (has_se && (key_of(s, se) == month_a || key_of(s, se) == month_b) && key_of(s, se) != 0) {
    pick_key = key_of(s, se);
  } else if (rx_find(RX_ECHO, s, len, 0, rf, 0)) {
    pick_key = last_key;
  } else if (first_valid_cp <= 5) {
    pick_key = first_key;
  } else {
    pick_key = last_key;
  }
  pick = pick_key == month_a ? 0 : 1;
out:
  free(s);
  return pick;
}

/* ---- entropy of the first tokens ---------------------------------------------------------------- */

double rd_numleak_entropy_bits(const double *lp, const int *n_alt, int n_tokens) {
  int use = n_tokens < 2 ? n_tokens : 2;
  if (use <= 0) return NAN;
  double total = 0.0;
  for (int t = 0, off = 0; t < use; off += n_alt[t], t++) {
    double psum = 0.0;
    for (int i = 0; i < n_alt[t]; i++) psum += exp(lp[off + i]);
    double rest = 1.0 - psum;
    double h = 0.0;
    for (int i = 0; i < n_alt[t]; i++) {
      double p = exp(lp[off + i]);
      if (p > 1e-12) h += p * log2(p);
    }
    if (rest > 0.0 && rest > 1e-12) h += rest * log2(rest);
    total += -h;
  }
  return total / (double)use;
}

/* ---- months ------------------------------------------------------------------------------------------- */

int rd_numleak_month(const char *text, int allow_day, int32_t *yyyymm) {
  if (!text) return 0;
  while (*text == ' ' || *text == '\t') text++;
  size_t n = strlen(text);
  while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t' || text[n - 1] == '\r')) n--;
  int y = 0, m = 0;
  int digits_only = n > 0;
  for (size_t i = 0; i < n; i++) digits_only &= isdigit((unsigned char)text[i]) != 0;
  if (digits_only && n == 6) {
    y = (text[0] - '0') * 1000 + (text[1] - '0') * 100 + (text[2] - '0') * 10 + (text[3] - '0');
    m = (text[4] - '0') * 10 + (text[5] - '0');
  } else if ((n == 7 || (allow_day && n == 10)) && text[4] == '-') {
    for (size_t i = 0; i < 7; i++)
      if (i != 4 && !isdigit((unsigned char)text[i])) return 0;
    if (n == 10 && (text[7] != '-' || !isdigit((unsigned char)text[8]) || !isdigit((unsigned char)text[9])))
      return 0;
    y = (text[0] - '0') * 1000 + (text[1] - '0') * 100 + (text[2] - '0') * 10 + (text[3] - '0');
    m = (text[5] - '0') * 10 + (text[6] - '0');
    if (n == 10) {
      int d = (text[8] - '0') * 10 + (text[9] - '0');
      if (d < 1 || d > 31) return 0;
    }
  } else {
    static const char *const names[12] = {"january", "february", "march", "april", "may", "june", "july",
                                           "august", "september", "october", "november", "december"};
    size_t sp = 0;
    while (sp < n && isalpha((unsigned char)text[sp])) sp++;
    if (sp < 3 || sp + 5 != n || text[sp] != ' ') return 0;
    for (size_t i = sp + 1; i < n; i++)
      if (!isdigit((unsigned char)text[i])) return 0;
    for (int k = 0; k < 12 && !m; k++)
      if ((sp == 3 && strncasecmp(text, names[k], 3) == 0) ||
          (sp == strlen(names[k]) && strncasecmp(text, names[k], sp) == 0))
        m = k + 1;
    y = atoi(text + sp + 1);
  }
  if (m < 1 || m > 12 || y < 1000) return 0;  /* four-digit years: the leakage layout's months */
  *yyyymm = (int32_t)(y * 100 + m);
  return 1;
}
