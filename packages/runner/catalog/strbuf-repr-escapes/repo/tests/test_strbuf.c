#include "check.h"
#include "strbuf.h"

static void append_and_format(void) {
    strbuf sb;
    sb_init(&sb);
    CHECK_STR(sb_cstr(&sb), "");
    sb_append(&sb, "hello");
    sb_appendf(&sb, ", %d%s", 42, "!");
    CHECK_STR(sb_cstr(&sb), "hello, 42!");
    CHECK(sb.len == 10);
    sb_free(&sb);
}

static void grows_past_initial_capacity(void) {
    strbuf sb;
    sb_init(&sb);
    for (int i = 0; i < 1000; i++) sb_append(&sb, "x");
    CHECK(sb.len == 1000);
    CHECK(sb.cap > 1000);
    sb_free(&sb);
}

static void binary_safe(void) {
    strbuf sb;
    sb_init(&sb);
    sb_append_len(&sb, "a\0b", 3);
    CHECK(sb.len == 3);
    CHECK(sb.data[1] == '\0' && sb.data[2] == 'b');
    sb_free(&sb);
}

static void trim(void) {
    strbuf sb;
    sb_init(&sb);
    sb_append(&sb, "  xx hi xx  ");
    sb_trim(&sb, " x");
    CHECK_STR(sb_cstr(&sb), "hi");
    sb_free(&sb);
}

static void repr_basic_escapes(void) {
    strbuf sb;
    sb_init(&sb);
    sb_cat_repr(&sb, "a\"b\\c\n\r\t", 8);
    CHECK_STR(sb_cstr(&sb), "\"a\\\"b\\\\c\\n\\r\\t\"");
    sb_free(&sb);
}

TEST_MAIN(T(append_and_format), T(grows_past_initial_capacity), T(binary_safe), T(trim), T(repr_basic_escapes))
