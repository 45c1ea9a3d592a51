/* libFuzzer harness of the NumLeak reply parsers (include/rmdiag/import/numleak_parse.h): every
 * input runs through the numeric parser, the ranking parser (the two candidate months from the
 * first two bytes), the normalisation, the month parser (with and without a day) and, read as
 * log-probabilities, the entropy; their results are checked against what the header promises. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "rmdiag/import/numleak_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void bad(const char *fn, const char *msg) {
  fprintf(stderr, "fuzz %s: %s\n", fn, msg);
  abort();
}

/* The top alternatives of up to 4 tokens from the bytes: the importer hands over finite
 * log-probabilities <= 0 and at most 32 per token. */
static void entropy(const uint8_t *d, size_t n) {
  double lp[4 * 32] = {0};
  int n_alt[4] = {0}, nt = 0, k = 0;
  size_t at = 0;
  while (nt < 4 && at < n) {
    int m = d[at++] % 33;
    n_alt[nt] = 0;
    for (int a = 0; a < m && at + 2 <= n; a++, at += 2)
      lp[k + n_alt[nt]++] = -((double)(d[at] | d[at + 1] << 8) / 1024.0);
    k += n_alt[nt++];
  }
  double h = rd_numleak_entropy_bits(lp, n_alt, nt);
  if (nt == 0 && !isnan(h)) bad("rd_numleak_entropy_bits", "a value for no tokens");
  if (nt > 0 && !(isfinite(h) && h >= 0.0)) bad("rd_numleak_entropy_bits", "not a finite value >= 0");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  int32_t ma = 190001 + 100 * (data[0] % 200) + data[0] / 200 * 5;  /* a few months in 1900-2099 */
  int32_t mb = 190001 + 100 * (data[1] % 200) + data[1] % 12;
  char *text = malloc(size - 1);
  if (!text) return 0;
  memcpy(text, data + 2, size - 2);
  text[size - 2] = '\0';

  double v = 0.0;
  int num = rd_numleak_parse_numeric(text, &v);
  if (num < -1 || num > 1) bad("rd_numleak_parse_numeric", "a return value other than -1, 0, 1");
  if (num == 1 && !isfinite(v)) bad("rd_numleak_parse_numeric", "a number that is not finite");
  int pick = rd_numleak_parse_comparative(text, ma, mb);
  if (pick < -2 || pick > 1) bad("rd_numleak_parse_comparative", "a return value other than -2 .. 1");
  char *norm = rd_numleak_normalize(text);
  /* all three reject the same texts (invalid UTF-8) */
  if ((norm == NULL) != (num == -1) || (num == -1) != (pick == -2))
    bad("rd_numleak_normalize", "the parsers disagree on whether the text is valid UTF-8");
  double v2 = 0.0;
  if (norm && (rd_numleak_parse_numeric(norm, &v2) != num || (num == 1 && v2 != v)))
    bad("rd_numleak_normalize", "parsing the normalised text gives another result");
  free(norm);
  for (int day = 0; day < 2; day++) {
    int32_t m = 0;
    /* a month the leakage input layout accepts: year 1000-9999, month 01-12 */
    if (rd_numleak_month(text, day, &m) == 1 && !(m >= 100001 && m <= 999912 && m % 100 >= 1 && m % 100 <= 12))
      fz_finding("numleak-month-year", "rd_numleak_month", "a month the leakage layout refuses was accepted");
  }
  free(text);
  entropy(data + 2, size - 2);
  return 0;
}
