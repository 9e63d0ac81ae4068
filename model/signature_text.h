/* An export signature's one-line text from its JSON form (kbpkg.json "signatures", the index's
 * dev.kbpkg.signatures): pure, so every module that shows signatures renders them alike. */
#ifndef KB_MODEL_SIGNATURE_TEXT_H
#define KB_MODEL_SIGNATURE_TEXT_H

/* "name(out: out bf16[rows, cols], rows: i64, stream) -> status" from one signature object
 * (a jansson json_t *); NULL when it is not one. Caller frees. */
char *kbi_export_sig_text_json(const char *name, const void *json_sig);

#endif
