/* The HTML page of `rmdiag report`: for each report its warnings, figures (Vega-Lite specifications drawn in the
 * browser by the vendored vega, vega-lite and vega-embed, inlined so the page opens offline), tables and
 * provenance. Nothing in the page depends on the time or the machine: the same reports give the same bytes.
 * After drawing, each figure carries data-marks (the marks drawn) and the body data-rendered, data-failed and
 * data-console (errors seen), which the browser test reads. */
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"
#include "rmdiag/common/jsonutil.h"
#include "rmdiag/version.h"

extern const unsigned char rd_vega_js[], rd_vega_lite_js[], rd_vega_embed_js[];
extern const size_t rd_vega_js_len, rd_vega_lite_js_len, rd_vega_embed_js_len;

#define RD_VEGA_VERSIONS "vega 6.4.0, vega-lite 6.5.0, vega-embed 7.3.0"

static void esc(FILE *fp, const char *s) {
  for (; s && *s; s++) switch (*s) {
      case '&': fputs("&amp;", fp); break;
      case '<': fputs("&lt;", fp); break;
      case '>': fputs("&gt;", fp); break;
      case '"': fputs("&quot;", fp); break;
      case '\'': fputs("&#39;", fp); break;
      default: fputc(*s, fp);
    }
}

/* A vendored bundle inside <script>, without its trailing sourceMappingURL comment (the map is not shipped and
 * a browser would try to load it). */
static void put_script(FILE *fp, const unsigned char *js, size_t len) {
  const char *s = (const char *)js;
  size_t n = len;
  const char *tag = "\n//# sourceMappingURL=";
  size_t tl = strlen(tag);
  for (size_t i = len > 512 ? len - 512 : 0; i + tl <= len; i++)
    if (memcmp(s + i, tag, tl) == 0) n = i;
  fputs("<script>", fp);
  fwrite(s, 1, n, fp);
  fputs("</script>\n", fp);
}

static const char *const page_style =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#222;max-width:1180px;"
    "margin:0 auto;padding:0 20px 60px}h1{font-size:24px;margin:24px 0 4px}h2{font-size:20px;margin:36px 0 8px;"
    "border-bottom:2px solid #ddd;padding-bottom:4px}h3{font-size:16px;margin:22px 0 8px}"
    "nav ul{padding-left:20px}table{border-collapse:collapse;margin:6px 0 4px;font-size:13px}"
    "th,td{padding:3px 8px;border-bottom:1px solid #e4e4e4;text-align:left;vertical-align:top}"
    "th{border-bottom:2px solid #999;background:#fafafa}td.num,th.num{text-align:right;"
    "font-variant-numeric:tabular-nums;white-space:nowrap}caption{text-align:left;font-weight:600;padding:4px 0}"
    ".legend{color:#555;font-size:12.5px;margin:2px 0 14px}.warnings{background:#fff7e0;border:1px solid #f0c36d;"
    "padding:6px 14px;border-radius:4px}.warnings li{margin:3px 0}.ok{color:#2a7a2a}"
    "figure{margin:14px 0 26px;padding:10px;border:1px solid #eee;border-radius:4px;overflow-x:auto}"
    "figcaption{color:#444;font-size:13px;margin-top:6px;max-width:900px}.prov td:first-child{color:#666;"
    "white-space:nowrap}code{font-size:12px;word-break:break-all}details summary{cursor:pointer;margin:6px 0}";

/* Records console errors and uncaught exceptions before anything else runs, for the page's own check. */
static const char *const console_hook =
    "<script>(function(){var log=[];window.__rmdiagConsole=log;var e=console.error;console.error=function(){"
    "log.push(Array.prototype.map.call(arguments,String).join(' '));return e.apply(console,arguments)};"
    "window.addEventListener('error',function(ev){log.push('uncaught: '+ev.message)});})();</script>\n";

/* Draws every figure; counts the data marks Vega drew into each (axes and legends not counted). */
static const char *const render_script =
    "<script>(function(){var specs=JSON.parse(document.getElementById('rmdiag-specs').textContent);"
    "var figs=document.querySelectorAll('figure.rd-figure');var pending=specs.length,failed=0;"
    "function marks(m){var n=0;if(!m)return 0;if(m.marktype==='group'){(m.items||[]).forEach(function(g){"
    "(g.items||[]).forEach(function(c){n+=marks(c)})})}else if(m.role==='mark'){n+=(m.items||[]).length}return n}"
    "function finish(){document.body.setAttribute('data-failed',String(failed));document.body.setAttribute("
    "'data-console',JSON.stringify(window.__rmdiagConsole));document.body.setAttribute('data-render-ms',"
    "String(Math.round(performance.now())));document.body.setAttribute('data-rendered',String(specs.length-failed))}"
    "function done(){if(--pending===0)finish()}if(!pending)finish();"
    "specs.forEach(function(spec,i){var fig=figs[i];vegaEmbed(fig.querySelector('.vis'),spec,{mode:'vega-lite',"
    "renderer:'svg',actions:{export:true,source:false,compiled:false,editor:false}}).then(function(res){"
    "fig.setAttribute('data-marks',String(marks(res.view.scenegraph().root)));fig.setAttribute('data-status','ok');"
    "done()}).catch(function(err){failed++;fig.setAttribute('data-status','error');fig.setAttribute('data-error',"
    "String(err));console.error('figure '+fig.id+': '+err);done()})})})();</script>\n";

static void write_table(FILE *fp, const rd_table *t) {
  int64_t rows = rd_table_rows(t);
  int collapse = !t->in_summary;
  if (collapse) {
    fputs("<details><summary>", fp);
    esc(fp, t->title);
    fprintf(fp, " (%lld rows; <code>rmdiag table REPORT --table ", (long long)rows);
    esc(fp, t->name);
    fputs("</code>)</summary>\n", fp);
  }
  fputs("<table><caption>", fp);
  esc(fp, t->title);
  fputs("</caption>\n<thead><tr>", fp);
  for (int c = 0; c < t->n_cols; c++) {
    if (t->cols[c].hidden) continue;
    fputs(t->cols[c].type == RD_COL_TEXT ? "<th>" : "<th class=\"num\">", fp);
    esc(fp, t->cols[c].label);
    fputs("</th>", fp);
  }
  fputs("</tr></thead>\n<tbody>\n", fp);
  char buf[600];
  for (int64_t r = 0; r < rows; r++) {
    fputs("<tr>", fp);
    for (int c = 0; c < t->n_cols; c++) {
      if (t->cols[c].hidden) continue;
      rd_table_display(t, r, c, 0, 0, buf, sizeof buf);
      fputs(t->cols[c].type == RD_COL_TEXT ? "<td>" : "<td class=\"num\">", fp);
      esc(fp, buf);
      fputs("</td>", fp);
    }
    fputs("</tr>\n", fp);
  }
  fputs("</tbody></table>\n<div class=\"legend\">", fp);
  esc(fp, t->legend);
  for (int c = 0; c < t->n_cols; c++) {
    if (t->cols[c].hidden || !t->cols[c].blank) continue;
    int any = 0;
    for (int64_t r = 0; r < rows && !any; r++) any = t->cells[r * t->n_cols + c].kind == RD_CELL_BLANK;
    if (!any) continue;
    fputs("<br>", fp);
    esc(fp, t->cols[c].label);
    fputs(" -: ", fp);
    esc(fp, t->cols[c].blank);
  }
  for (int i = 0; i < t->n_notes; i++) {
    fputs("<br>", fp);
    esc(fp, t->notes[i]);
  }
  fputs("</div>\n", fp);
  if (collapse) fputs("</details>\n", fp);
}

static void write_warnings(FILE *fp, const rd_view *v, const char *none) {
  if (!v->n_warnings) {
    if (none) fprintf(fp, "<p class=\"ok\">%s</p>\n", none);
    return;
  }
  fputs("<div class=\"warnings\"><b>Warnings</b> (results a reader could misread)<ul>\n", fp);
  for (int i = 0; i < v->n_warnings; i++) {
    fputs("<li>", fp);
    esc(fp, v->warnings[i]);
    fputs("</li>\n", fp);
  }
  fputs("</ul></div>\n", fp);
}

static void prov_row(FILE *fp, const char *key, const char *val) {
  fputs("<tr><td>", fp);
  esc(fp, key);
  fputs("</td><td>", fp);
  esc(fp, val);
  fputs("</td></tr>\n", fp);
}

static void write_provenance(FILE *fp, const rd_loaded *r) {
  const cJSON *m = cJSON_GetObjectItem(r->report, "rmdiag");
  char num[64];
  fputs("<h3>Provenance</h3>\n<table class=\"prov\">\n", fp);
  prov_row(fp, "report file", r->path);
  static const char *const keys[] = {"version", "job", "kind", "spec_sha256", "backend", NULL};
  for (int i = 0; keys[i]; i++) prov_row(fp, keys[i], rd_jstr(cJSON_GetObjectItem(m, keys[i])));
  static const char *const nums[] = {"ranks", "seconds", "seed", NULL};
  for (int i = 0; nums[i]; i++) {
    rd_format_exact(rd_jnum(cJSON_GetObjectItem(m, nums[i])), num, sizeof num);
    prov_row(fp, nums[i], num);
  }
  const cJSON *inputs = cJSON_GetObjectItem(m, "inputs");
  for (const cJSON *in = inputs ? inputs->child : NULL; in; in = in->next) {
    char line[2048];
    rd_format_exact(rd_jnum(cJSON_GetObjectItem(in, "bytes")), num, sizeof num);
    snprintf(line, sizeof line, "%s (%s bytes, group %s)", rd_jstr(cJSON_GetObjectItem(in, "path")), num,
             rd_jstr(cJSON_GetObjectItem(in, "group")));
    prov_row(fp, "input", line);
  }
  const cJSON *d = cJSON_GetObjectItem(m, "description");
  prov_row(fp, "description", cJSON_IsString(d) ? d->valuestring : "(none)");
  char *opts = rd_json_canonical(cJSON_GetObjectItem(m, "options"));
  fputs("<tr><td>options</td><td><code>", fp);
  esc(fp, opts ? opts : "");
  fputs("</code></td></tr>\n</table>\n", fp);
  free(opts);
}

/* One report's section; figure numbers and ids continue across reports (*fig). */
static void write_report(FILE *fp, const rd_loaded *r, int idx, int *fig) {
  const rd_view *v = &r->view;
  fprintf(fp, "<section class=\"report\" id=\"report-%d\">\n<h2>", idx);
  esc(fp, v->heading);
  fputs("</h2>\n", fp);
  const cJSON *d = rd_jget(r->report, "rmdiag.description");
  if (cJSON_IsString(d)) {
    fputs("<p><i>", fp);
    esc(fp, d->valuestring);
    fputs("</i></p>\n", fp);
  }
  write_warnings(fp, v, "No warnings.");
  if (v->n_figures) fputs("<h3>Figures</h3>\n", fp);
  for (int i = 0; i < v->n_figures; i++, (*fig)++) {
    fprintf(fp, "<figure class=\"rd-figure\" id=\"fig-%d\" data-name=\"", *fig);
    esc(fp, v->figures[i].name);
    fprintf(fp, "\" data-report=\"%d\"><div class=\"vis\"></div><figcaption><b>Figure %d. ", idx, *fig + 1);
    esc(fp, v->figures[i].title);
    fputs(".</b> ", fp);
    esc(fp, v->figures[i].caption);
    fputs("</figcaption></figure>\n", fp);
  }
  fputs("<h3>Tables</h3>\n", fp);
  for (int i = 0; i < v->n_tables; i++) write_table(fp, v->tables[i]);
  write_provenance(fp, r);
  fputs("</section>\n", fp);
}

/* Every figure's specification in order, as JSON inside <script type="application/json">: numbers printed
 * exactly, and '<' written as \u003c so no text can close the script element. */
static void write_specs(FILE *fp, const rd_loaded *r, int n) {
  cJSON *all = cJSON_CreateArray();
  for (int i = 0; i < n; i++)
    for (int k = 0; k < r[i].view.n_figures; k++) cJSON_AddItemReferenceToArray(all, r[i].view.figures[k].spec);
  cJSON *copy = cJSON_Duplicate(all, 1);
  cJSON_Delete(all);
  rd_json_exact_numbers(copy);
  char *text = cJSON_PrintUnformatted(copy);
  cJSON_Delete(copy);
  fputs("<script type=\"application/json\" id=\"rmdiag-specs\">", fp);
  for (const char *p = text ? text : "[]"; *p; p++) {
    if (*p == '<') fputs("\\u003c", fp);
    else fputc(*p, fp);
  }
  fputs("</script>\n", fp);
  free(text);
}

void rd_html_write(FILE *fp, const rd_loaded *r, int n, const rd_view *cross) {
  fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n", fp);
  fprintf(fp, "<meta name=\"generator\" content=\"rmdiag %s (%s)\">\n<title>rmdiag report: ", RMDIAG_VERSION,
          RD_VEGA_VERSIONS);
  for (int i = 0; i < n; i++) {
    if (i) fputs(", ", fp);
    esc(fp, rd_jstr(rd_jget(r[i].report, "rmdiag.job")));
  }
  fprintf(fp, "</title>\n<style>%s</style>\n", page_style);
  fputs(console_hook, fp);
  put_script(fp, rd_vega_js, rd_vega_js_len);
  put_script(fp, rd_vega_lite_js, rd_vega_lite_js_len);
  put_script(fp, rd_vega_embed_js, rd_vega_embed_js_len);
  fputs("</head>\n<body>\n<header><h1>rmdiag report</h1>\n", fp);
  fprintf(fp, "<p>%d report%s, drawn by rmdiag %s with %s (embedded; the page needs no network). Numbers in tables "
          "are rounded for reading: <code>rmdiag table REPORT.json --format csv</code> gives every digit.</p>\n",
          n, n == 1 ? "" : "s", RMDIAG_VERSION, RD_VEGA_VERSIONS);
  fputs("<nav><ul>\n", fp);
  for (int i = 0; i < n; i++) {
    fprintf(fp, "<li><a href=\"#report-%d\">", i);
    esc(fp, r[i].view.heading);
    fprintf(fp, "</a>%s</li>\n", r[i].view.n_warnings ? " (warnings)" : "");
  }
  fputs("</ul></nav>\n", fp);
  if (cross && cross->n_warnings) {
    fputs("<h3>Across reports</h3>\n", fp);
    write_warnings(fp, cross, NULL);
  }
  fputs("</header>\n", fp);
  int fig = 0;
  for (int i = 0; i < n; i++) write_report(fp, &r[i], i, &fig);
  write_specs(fp, r, n);
  fputs(render_script, fp);
  fputs("</body>\n</html>\n", fp);
}
