/* The NumLeak reply parsers (numeric replies, two-month rankings), the reply normalisation they
 * share, first-token entropy and month text: what the numleak importer applies to each panel row. */
#ifndef RMDIAG_IMPORT_NUMLEAK_PARSE_H
#define RMDIAG_IMPORT_NUMLEAK_PARSE_H

#include <stdint.h>

/* NumLeak's numeric reply parser (docs/reference.md, 'numleak'): NFKC, the four dashes to '-',
 * every number followed by % or "percent" and every number followed by bps / basis point(s) (÷ 100)
 * averaged; with no such hit, a reply of at most 30 code points gives its first bare number not
 * touching an ASCII letter, rejected above 100 in absolute value. Returns 1 with *value set, 0 for
 * "no number", -1 when `text` is not valid UTF-8. `text` may be NULL (no number). */
int rd_numleak_parse_numeric(const char *text, double *value);

/* NumLeak's two-month ranking parser (parse_comparative): month_a and month_b are YYYYMM.
 * Returns 0 when the reply picks month_a, 1 for month_b, -1 for no pick (refusal, no candidate
 * month, no text), -2 when `text` is not valid UTF-8. */
int rd_numleak_parse_comparative(const char *text, int32_t month_a, int32_t month_b);

/* The normalisation both parsers apply: NFKC, then U+2212, U+2013, U+2014, U+2010 to '-', then
 * Python's str.strip() white space removed at both ends. Returns a malloc'd string (NULL when
 * `text` is not valid UTF-8 or memory runs out). */
char *rd_numleak_normalize(const char *text);

/* Mean entropy (bits) of the first two tokens from their top alternatives' natural-log
 * probabilities: per token p_i = exp(lp_i), a "rest" bucket 1 - Σ p_i when positive, H =
 * -Σ p log2 p over p > 1e-12. lp holds n_alt[t] values per token, packed. NaN for no tokens. */
double rd_numleak_entropy_bits(const double *lp, const int *n_alt, int n_tokens);

/* Month text → YYYYMM (years 1000-9999): "YYYY-MM", "YYYYMM", "Month YYYY" (full or three-letter English month
 * names, any case), and, when allow_day, "YYYY-MM-DD". Returns 1 on success. */
int rd_numleak_month(const char *text, int allow_day, int32_t *yyyymm);

#endif
