/* Registration entry points, one per ext/ file; embed_ext.c calls them all. */
#ifndef EMBED_EXT_FUNCTIONS_H
#define EMBED_EXT_FUNCTIONS_H
#include <sqlite3ext.h>

int ext_register_vector_functions(sqlite3 *db);   /* ext_vector.c */
int ext_register_position_functions(sqlite3 *db); /* ext_position.c */
int ext_register_info_functions(sqlite3 *db);     /* ext_info.c */
int ext_register_model_functions(sqlite3 *db);    /* ext_models.c */
int ext_register_models_table(sqlite3 *db);       /* ext_models_table.c */
int ext_register_tokens_table(sqlite3 *db);       /* ext_tokens_table.c */
int ext_register_text_functions(sqlite3 *db);     /* ext_text.c */
int ext_register_index_module(sqlite3 *db);       /* ext_index.c */

#endif
