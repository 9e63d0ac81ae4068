/* The hub's benchmark table for a version: published results per target (kb_package_bench_results).
 */
#include "hub_render.h"

#include <jansson.h>
#include <kbpkg/build.h>
#include <stdio.h>
#include <stdlib.h>

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* One row per case: target, device, case and shape, median, rate, baseline ratio. */
static int case_row(hub_buf *b, json_t *res, json_t *c)
{
    json_t *dev = json_object_get(res, "device"), *base = json_object_get(c, "baseline");
    const char *unit = json_object_get(c, "tflops") ? "tflops" : "gbps";
    double rate = json_number_value(json_object_get(c, unit));
    double brate = json_number_value(json_object_get(base, unit));
    /* the device with the driver and clocks it was measured at (kb_bench_device_text) */
    char *dev_json = json_dumps(dev, JSON_COMPACT), *dev_text = kb_bench_device_text(dev_json);
    free(dev_json);
    int rc = hub_buf_puts(b, "<tr><td>");
    rc = rc ? rc : kbi_html_escape(b, str(res, "target"));
    rc = rc ? rc : hub_buf_puts(b, "</td><td>");
    rc = rc ? rc : kbi_html_escape(b, dev_text ? dev_text : str(dev, "name"));
    rc = rc ? rc : hub_buf_puts(b, "</td><td>");
    rc = rc ? rc : kbi_html_escape(b, str(c, "case"));
    rc = rc ? rc : hub_buf_puts(b, " ");
    rc = rc ? rc : kbi_html_escape(b, str(c, "shape"));
    rc = rc ? rc
            : hub_buf_printf(b, "</td><td>%.3f ms</td><td>%.2f %s</td><td>",
                             json_number_value(json_object_get(c, "seconds")) * 1e3, rate,
                             unit[0] == 't' ? "TFLOP/s" : "GB/s");
    if (!rc && json_is_object(base) && brate > 0) {
        rc = hub_buf_printf(b, "%.2fx ", rate / brate);
        rc = rc ? rc : kbi_html_escape(b, str(base, "name"));
    } else if (!rc) {
        rc = hub_buf_puts(b, "none");
    }
    kb_string_free(dev_text);
    return rc ? rc : hub_buf_puts(b, "</td></tr>\n");
}

int hub_bench_section(hub_buf *b, const char *results, const char *error)
{
    json_t *doc = results ? json_loads(results, 0, NULL) : NULL;
    int rc = 0;
    if (!json_is_array(doc)) {
        rc = hub_buf_puts(b, "<p class=\"bench\">benchmarks unavailable: ");
        rc = rc ? rc : kbi_html_escape(b, error ? error : "unreadable");
        rc = rc ? rc : hub_buf_puts(b, "</p>\n");
    } else if (json_array_size(doc) == 0) {
        rc = hub_buf_puts(b, "<p class=\"bench\">no benchmark results published</p>\n");
    } else {
        rc = hub_buf_puts(b, "<h4>benchmarks</h4>\n<table class=\"bench\"><tr><th>target</th>"
                             "<th>device</th><th>case</th><th>median</th><th>rate</th>"
                             "<th>vs baseline</th></tr>\n");
        size_t i, k;
        json_t *res, *c;
        json_array_foreach(doc, i, res)
        {
            json_array_foreach(json_object_get(res, "cases"), k, c)
            {
                if (!rc)
                    rc = case_row(b, res, c);
            }
        }
        rc = rc ? rc : hub_buf_puts(b, "</table>\n");
    }
    json_decref(doc);
    return rc;
}
