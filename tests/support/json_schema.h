/* A small JSON Schema validator (the subset docs/json/ uses), written with jansson. */
#ifndef KBT_JSON_SCHEMA_H
#define KBT_JSON_SCHEMA_H

#include <jansson.h>

/*
 * Keywords (JSON Schema 2020-12 meaning): type (a name or a list; "number" takes integers),
 * const, enum, pattern (POSIX extended regex), minimum, minItems, properties, required,
 * additionalProperties (false or a schema), unevaluatedProperties (false: keys that no
 * properties of this schema, its $ref, allOf or matching anyOf/oneOf branches named),
 * items, allOf, anyOf, oneOf, $ref ("#/$defs/x", "file.json" or "file.json#/$defs/x", files
 * found in schema_dir), and the annotations $schema, $id, $defs, $comment, title,
 * description, examples. Any other keyword is an error in the schema, so a misspelt
 * "requried" cannot silently check nothing; so is a required key that properties lacks.
 */

/* Validate doc against schema (whose "#/..." refs resolve inside root). NULL when it is
 * valid, else one line per problem, "$.path.to[0].key: what is wrong" (owned). */
char *kbt_json_check(const json_t *root, const json_t *schema, const json_t *doc,
                     const char *schema_dir);

/* The same for a reference: "probe.json" or "config.json#/$defs/list" under schema_dir. */
char *kbt_json_check_ref(const char *schema_dir, const char *ref, const json_t *doc);

#endif
