// The Cline core's memory (issue 47), a Node-API addon built at install (mapped-core.ts) and loaded
// by supervisor/core-memory.cjs inside the core:
// - mapLatin1(path): the file's bytes, mapped read-only, as an external one-byte string. The core's
//   45 MB bundle source then lives in the page cache, shared by every core that maps the same file,
//   instead of a private copy on each core's V8 heap (the source must stay: V8 compiles functions
//   lazily from it).
// - trim(full): glibc's malloc_trim (free heap pages back to the kernel), after V8's low-memory
//   collection when `full` (full collections that also shrink the young generation and release the
//   freed pages: ≈ 0.26 CPU-s on an idle core, against ≈ 0.12 for a plain full collection).
#define NAPI_VERSION 8
#define NAPI_EXPERIMENTAL
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <node_api.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <v8.h>

static napi_value fail(napi_env env, const char *what, const char *path, int err) {
  char msg[4500];
  snprintf(msg, sizeof msg, "core-memory: %s %s: %s", what, path, strerror(err));
  napi_throw_error(env, NULL, msg);
  return NULL;
}

static void unmap(node_api_basic_env, void *data, void *hint) { munmap(data, (size_t)hint); }

static napi_value map_latin1(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  char path[4096];
  size_t len = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
      napi_get_value_string_utf8(env, argv[0], path, sizeof path, &len) != napi_ok ||
      len >= sizeof path - 1) {
    napi_throw_type_error(env, NULL, "core-memory: mapLatin1(path) needs a path shorter than 4095 bytes");
    return NULL;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(env, "cannot open", path, errno);
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
    int e = errno ? errno : EINVAL;
    close(fd);
    return fail(env, "not a non-empty regular file:", path, e);
  }
  size_t size = (size_t)st.st_size;
  void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) return fail(env, "cannot map", path, e);
  napi_value s;
  bool copied = false;
  if (node_api_create_external_string_latin1(env, (char *)p, size, unmap, (void *)size, &s, &copied) !=
      napi_ok) {
    munmap(p, size);
    napi_throw_error(env, NULL, "core-memory: node_api_create_external_string_latin1 failed");
    return NULL;
  }
  if (copied) munmap(p, size);
  return s;
}

static napi_value trim(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  bool full = false;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) == napi_ok && argc >= 1)
    napi_get_value_bool(env, argv[0], &full);
  v8::Isolate *isolate = v8::Isolate::GetCurrent();
  if (full && isolate != nullptr) isolate->LowMemoryNotification();
  napi_value r;
  napi_get_boolean(env, malloc_trim(0) != 0, &r);
  return r;
}

NAPI_MODULE_INIT() {
  napi_value f;
  napi_create_function(env, "mapLatin1", NAPI_AUTO_LENGTH, map_latin1, NULL, &f);
  napi_set_named_property(env, exports, "mapLatin1", f);
  napi_create_function(env, "trim", NAPI_AUTO_LENGTH, trim, NULL, &f);
  napi_set_named_property(env, exports, "trim", f);
  return exports;
}
