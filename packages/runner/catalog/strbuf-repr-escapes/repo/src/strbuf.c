#include "strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char empty[1] = "";

void sb_init(strbuf *sb) {
    sb->data = empty;
    sb->len = 0;
    sb->cap = 0;
}

void sb_free(strbuf *sb) {
    if (sb->cap) free(sb->data);
    sb_init(sb);
}

int sb_reserve(strbuf *sb, size_t extra) {
    size_t need = sb->len + extra + 1;
    if (need <= sb->cap) return 0;
    size_t cap = sb->cap ? sb->cap : 16;
    while (cap < need) cap *= 2;
    char *p = sb->cap ? realloc(sb->data, cap) : malloc(cap);
    if (!p) return -1;
    if (!sb->cap) p[0] = '\0';
    sb->data = p;
    sb->cap = cap;
    return 0;
}

int sb_append_len(strbuf *sb, const char *s, size_t n) {
    if (sb_reserve(sb, n)) return -1;
    memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
    return 0;
}

int sb_append(strbuf *sb, const char *s) { return sb_append_len(sb, s, strlen(s)); }

int sb_appendf(strbuf *sb, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0 || sb_reserve(sb, (size_t)n)) {
        va_end(ap);
        return -1;
    }
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
    return 0;
}

void sb_clear(strbuf *sb) {
    sb->len = 0;
    if (sb->cap) sb->data[0] = '\0';
}

const char *sb_cstr(const strbuf *sb) { return sb->data; }

void sb_trim(strbuf *sb, const char *cset) {
    size_t start = 0, end = sb->len;
    while (start < end && strchr(cset, sb->data[start])) start++;
    while (end > start && strchr(cset, sb->data[end - 1])) end--;
    if (!sb->cap) return;
    memmove(sb->data, sb->data + start, end - start);
    sb->len = end - start;
    sb->data[sb->len] = '\0';
}

int sb_cat_repr(strbuf *sb, const char *s, size_t n) {
    if (sb_append(sb, "\"")) return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int rc;
        switch (c) {
        case '\\': rc = sb_append(sb, "\\\\"); break;
        case '"': rc = sb_append(sb, "\\\""); break;
        case '\n': rc = sb_append(sb, "\\n"); break;
        case '\r': rc = sb_append(sb, "\\r"); break;
        case '\t': rc = sb_append(sb, "\\t"); break;
        default: rc = sb_append_len(sb, (const char *)&c, 1); break;
        }
        if (rc) return -1;
    }
    return sb_append(sb, "\"");
}
