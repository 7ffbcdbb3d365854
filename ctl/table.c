/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A text table whose columns are padded to their widest cell (table.h). */
#include "table.h"
#include "util.h"

Table *table_new(const char *const *header) {
        Table *t = calloc(1, sizeof(Table));
        if (!t)
                return NULL;
        while (header[t->n_columns])
                t->n_columns++;
        if (table_add_row(t, header) < 0)
                return table_free(t);
        return t;
}

int table_add_row(Table *t, const char *const *cells) {
        char **m = realloc(t->cells, sizeof(char *) * t->n_columns * (t->n_rows + 1));
        if (!m)
                return -ENOMEM;
        t->cells = m;
        for (size_t c = 0; c < t->n_columns; c++) {
                m[t->n_rows * t->n_columns + c] = strdup(cells[c] ?: "-");
                if (!m[t->n_rows * t->n_columns + c]) {
                        for (size_t k = 0; k < c; k++)
                                free(m[t->n_rows * t->n_columns + k]);
                        return -ENOMEM;
                }
        }
        t->n_rows++;
        return 0;
}

void table_print(const Table *t, FILE *f, bool legend) {
        _cleanup_free_ size_t *width = calloc(t->n_columns, sizeof(size_t));

        if (!width)
                return;
        for (size_t r = 0; r < t->n_rows; r++)
                for (size_t c = 0; c < t->n_columns; c++)
                        width[c] = MAX(width[c], strlen(t->cells[r * t->n_columns + c]));
        for (size_t r = legend ? 0 : 1; r < t->n_rows; r++) {
                for (size_t c = 0; c < t->n_columns; c++) {
                        const char *cell = t->cells[r * t->n_columns + c];
                        if (c + 1 == t->n_columns)
                                fprintf(f, "%s", cell);
                        else
                                fprintf(f, "%-*s ", (int) width[c], cell);
                }
                fputc('\n', f);
        }
}

Table *table_free(Table *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_rows * t->n_columns; i++)
                free(t->cells[i]);
        free(t->cells);
        free(t);
        return NULL;
}
