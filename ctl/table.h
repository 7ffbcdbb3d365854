/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A text table: rows of cells, printed with columns padded to their widest cell. */

#include <stdio.h>

#include "macro.h"

typedef struct Table {
        size_t n_columns;
        char **cells; /* row-major, n_rows * n_columns, first row is the header */
        size_t n_rows;
} Table;

/* Creates a table with these header names (NULL-terminated). Returns NULL on OOM. */
Table *table_new(const char *const *header);

/* Appends one row of n_columns cells (copied; NULL shows as "-"). Returns 0 or -ENOMEM. */
int table_add_row(Table *t, const char *const *cells);

/* Prints the table; the header only when legend is true. */
void table_print(const Table *t, FILE *f, bool legend);

Table *table_free(Table *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Table *, table_free);
