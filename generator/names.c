// memstub_gen_name_check: what may name a stub (docs/runtime.md, "Stub names").
//
// A stub's name becomes the header's prefix (NAME_memStub, NAME_NUMDATA, ...)
// and, through memstub_add_stub, the functions memstub_NAME and
// memstub_NAME_*; it passes through m4. One function says which names are
// fine, for memstub gen, memstub build and memstub_add_stub (through
// memstub gen --check-name).
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

// Every memstub_ name of the public headers (made by cmake/ApiNames.cmake).
extern const char *const ms__gen_api_names[];
extern const unsigned long ms__gen_api_count;

// C's keywords, C11 and C23 (those with '_' and a capital fall to the
// reserved-identifier rule).
static const char *const keywords[] = {
    "alignas", "alignof",  "auto",     "bool",          "break",        "case",
    "char",    "const",    "constexpr", "continue",     "default",      "do",
    "double",  "else",     "enum",     "extern",        "false",        "float",
    "for",     "goto",     "if",       "inline",        "int",          "long",
    "nullptr", "register", "restrict", "return",        "short",        "signed",
    "sizeof",  "static",   "static_assert", "struct",   "switch",       "thread_local",
    "true",    "typedef",  "typeof",   "typeof_unqual", "union",        "unsigned",
    "void",    "volatile", "while",
};

// Whether stub names a and b claim a name in common: memstub_A and
// memstub_A_* against memstub_B and memstub_B_*, one the other or its start.
static int overlap(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > lb) return overlap(b, a);
  return strncmp(a, b, la) == 0 && (b[la] == '\0' || b[la] == '_');
}

/* The first words (up to the first '_' after memstub_) of the public
 * headers' names, once each, in their sorted order, into buf. */
static void api_words(char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = '\0';
  for (unsigned long i = 0; i < ms__gen_api_count; i++) {
    const char *w = ms__gen_api_names[i] + 8;  // after "memstub_"
    int wl = (int)strcspn(w, "_"), seen = 0;
    for (unsigned long j = 0; j < i && !seen; j++) {
      const char *v = ms__gen_api_names[j] + 8;
      seen = (int)strcspn(v, "_") == wl && strncmp(v, w, (size_t)wl) == 0;
    }
    if (seen) continue;
    int n = snprintf(buf + len, cap - len, "%s%.*s", len ? ", " : "", wl, w);
    if (n < 0 || (size_t)n >= cap - len) {  // cut: the docs list them all
      snprintf(buf + (len < cap - 5 ? len : cap - 5), 5, ", ..");
      return;
    }
    len += (size_t)n;
  }
}

int memstub_gen_name_check(const char *name, const char *const *others, size_t nothers,
                           memstub_error *err) {
  size_t n = strlen(name);
  if (n == 0) return memstub_error_set(err, -EINVAL, "a stub name is empty");
  char q[MS__QUOTE_MAX + 4];
  ms__quote(name, n, 40, q);
  if (!ms__is_ident(name, n))
    return memstub_error_set(err, -EINVAL, "'%s' is not a C identifier ([A-Za-z_][A-Za-z0-9_]*)",
                             q);
  if (n > MEMSTUB_GEN_NAME_MAX)
    return memstub_error_set(err, -EINVAL, "'%s' has %zu characters: a stub name has at most %d",
                             q, n, MEMSTUB_GEN_NAME_MAX);
  if (name[0] == '_')
    return memstub_error_set(err, -EINVAL,
                             "'%s' starts with '_': such names are reserved for the C "
                             "implementation", q);
  for (size_t i = 0; i < MS__ARRAY_SIZE(keywords); i++)
    if (strcmp(name, keywords[i]) == 0)
      return memstub_error_set(err, -EINVAL, "'%s' is a C keyword", q);
  if (strncmp(name, "m4_", 3) == 0)
    return memstub_error_set(err, -EINVAL,
                             "'%s' starts with m4_, the prefix of GNU m4's builtins (memstub gen "
                             "runs m4 -P)", q);
  if (strncmp(name, "MS_", 3) == 0)
    return memstub_error_set(err, -EINVAL,
                             "'%s' starts with MS_, the prefix of generator/memuse.h.m4's "
                             "macros", q);
  for (unsigned long i = 0; i < ms__gen_api_count; i++) {
    const char *api = ms__gen_api_names[i] + 8;  // after "memstub_"
    if (strncmp(api, name, n) != 0 || (api[n] != '\0' && api[n] != '_')) continue;
    char words[320];
    api_words(words, sizeof words);
    return memstub_error_set(err, -EINVAL,
                             "'%s' meets memstub's own %s (include/memstub/): a stub owns "
                             "memstub_%s and memstub_%s_*; memstub's names begin memstub_ and "
                             "one of: %s",
                             q, ms__gen_api_names[i], q, q, words);
  }
  for (size_t i = 0; i < nothers; i++) {
    if (!overlap(name, others[i])) continue;
    char q2[MS__QUOTE_MAX + 4];
    ms__quote(others[i], strlen(others[i]), 40, q2);
    if (strcmp(name, others[i]) == 0)
      return memstub_error_set(err, -EINVAL, "'%s' names another stub already", q);
    const char *longer = strlen(name) > strlen(others[i]) ? q : q2;
    return memstub_error_set(err, -EINVAL,
                             "'%s' overlaps the stub '%s': memstub_%s would be both stubs' "
                             "(a stub owns memstub_NAME and memstub_NAME_*)",
                             q, q2, longer);
  }
  return 0;
}
