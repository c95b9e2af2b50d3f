#ifndef STRBUF_H
#define STRBUF_H

#include <stdarg.h>
#include <stddef.h>

/* A growable byte string. `data` is always NUL-terminated (for sb_cstr) but may contain NULs. */
typedef struct {
    char *data;
    size_t len;
    size_t cap;
} strbuf;

void sb_init(strbuf *sb);
void sb_free(strbuf *sb);
/* Ensures room for `extra` more bytes; returns 0, or -1 when out of memory. */
int sb_reserve(strbuf *sb, size_t extra);
int sb_append_len(strbuf *sb, const char *s, size_t n);
int sb_append(strbuf *sb, const char *s);
int sb_appendf(strbuf *sb, const char *fmt, ...);
void sb_clear(strbuf *sb);
const char *sb_cstr(const strbuf *sb);
/* Removes leading and trailing bytes found in `cset`. */
void sb_trim(strbuf *sb, const char *cset);
/*
 * Appends a quoted, escaped representation of the `n` bytes at `s`, suitable for logs:
 * the result is wrapped in double quotes and contains only printable ASCII.
 */
int sb_cat_repr(strbuf *sb, const char *s, size_t n);

#endif
