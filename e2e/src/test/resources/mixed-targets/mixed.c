/*
 * One process running CPython (libpython3.11.so) and LuaJIT (libluajit-5.1.so) through their C
 * APIs, for CPythonMixedTest.
 *
 *   mixed alternate PY LUA SECONDS OUT   one thread calls py_entry and lua_entry in turn
 *   mixed threads PY LUA SECONDS OUT     thread py-worker calls py_entry, lua-worker lua_entry
 *   mixed nested PY LUA SECONDS OUT      one thread calls py_outer and lua_outer in turn:
 *                                        py_outer calls Lua's lua_entry through the C function
 *                                        host.lua, lua_outer Python's py_entry through c_python
 *
 * Each measuring thread first warms up for WARMUP_NS of its CPU time through py_warmup and
 * lua_warmup (the profilers' learning happens there), then calls the entry functions until it
 * has used SECONDS more, and OUT gets the thread CPU time spent in the calls made from C into
 * Python and into Lua, and (nested mode) in host.lua's and in c_python's calls within them, in
 * ns: "PY_NS LUA_NS LUA_IN_PY_NS PY_IN_LUA_NS".
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Loop iterations per call: a few milliseconds of CPU each, about as long in both languages. */
#define PY_ROUNDS 250000
#define LUA_ROUNDS 1000000
#define WARMUP_NS 300000000LL

static const char *py_path;
static const char *lua_path;
static long long measured_ns;

static long long thread_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die(const char *what) {
  fprintf(stderr, "mixed: %s\n", what);
  exit(1);
}

/* The module compiled from PY_PATH under that name, so its frames carry the file; needs the GIL. */
static PyObject *python_module(void) {
  FILE *f = fopen(py_path, "rb");
  if (f == NULL) die("cannot open the Python script");
  static char source[1 << 16];
  size_t n = fread(source, 1, sizeof source - 1, f);
  fclose(f);
  source[n] = 0;
  PyObject *code = Py_CompileString(source, py_path, Py_file_input);
  if (code == NULL) { PyErr_Print(); die("the Python script does not compile"); }
  PyObject *module = PyImport_ExecCodeModuleEx("mixed_py", code, (char *)py_path);
  if (module == NULL) { PyErr_Print(); die("the Python script failed"); }
  Py_DECREF(code);
  return module;
}

static PyObject *python_function(PyObject *module, const char *name) {
  PyObject *fn = PyObject_GetAttrString(module, name);
  if (fn == NULL) die(name);
  return fn;
}

static lua_State *lua_state(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  if (luaL_loadfile(L, lua_path) != 0 || lua_pcall(L, 0, 0, 0) != 0) die(lua_tostring(L, -1));
  return L;
}

/* Kept out of line so that the host's own frame sits under each interpreter's frames. */
__attribute__((noinline)) static void call_python(PyObject *fn) {
  PyObject *r = PyObject_CallFunction(fn, "i", PY_ROUNDS);
  if (r == NULL) { PyErr_Print(); die("a Python call failed"); }
  Py_DECREF(r);
}

__attribute__((noinline)) static void call_lua(lua_State *L, const char *fn) {
  lua_getglobal(L, fn);
  lua_pushinteger(L, LUA_ROUNDS);
  if (lua_pcall(L, 1, 1, 0) != 0) die(lua_tostring(L, -1));
  lua_pop(L, 1);
}

/* Nested mode: thread CPU time in host.lua's calls of Lua and in c_python's calls of Python. */
static long long lua_in_py_ns, py_in_lua_ns;

static void write_out(const char *out, long long py_ns, long long lua_ns) {
  FILE *f = fopen(out, "w");
  if (f == NULL) die("cannot write OUT");
  fprintf(f, "%lld %lld %lld %lld\n", py_ns, lua_ns, lua_in_py_ns, py_in_lua_ns);
  fclose(f);
}

/* For nested mode: the Lua state host.lua calls into, the Python function c_python calls. */
static lua_State *nested_lua;
static PyObject *nested_python;

/* host.lua(): Python -> C -> Lua. */
__attribute__((noinline)) static PyObject *host_lua(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  long long t0 = thread_ns();
  call_lua(nested_lua, "lua_entry");
  lua_in_py_ns += thread_ns() - t0;
  Py_RETURN_NONE;
}

/* c_python(): Lua -> C -> Python. */
__attribute__((noinline)) static int c_python(lua_State *L) {
  (void)L;
  long long t0 = thread_ns();
  call_python(nested_python);
  py_in_lua_ns += thread_ns() - t0;
  return 0;
}

static PyMethodDef host_methods[] = {
    {"lua", host_lua, METH_NOARGS, "calls lua_entry"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef host_module = {
    PyModuleDef_HEAD_INIT, .m_name = "host", .m_size = -1, .m_methods = host_methods};

static PyObject *init_host(void) {
  return PyModule_Create(&host_module);
}

/* Alternate and nested modes: py_first and lua_first in turn, after the warm-up. */
static void alternate(const char *out, const char *py_first, const char *lua_first) {
  PyObject *module = python_module();
  PyObject *py_warmup = python_function(module, "py_warmup");
  PyObject *py_entry = python_function(module, py_first);
  lua_State *L = lua_state();
  lua_register(L, "c_python", c_python);
  nested_lua = L;
  nested_python = python_function(module, "py_entry");
  long long end = thread_ns() + WARMUP_NS;
  while (thread_ns() < end) {
    call_python(py_warmup);
    call_lua(L, "lua_warmup");
  }
  long long py_ns = 0, lua_ns = 0;
  end = thread_ns() + measured_ns;
  while (thread_ns() < end) {
    long long t0 = thread_ns();
    call_python(py_entry);
    long long t1 = thread_ns();
    call_lua(L, lua_first);
    long long t2 = thread_ns();
    py_ns += t1 - t0;
    lua_ns += t2 - t1;
  }
  write_out(out, py_ns, lua_ns);
  lua_close(L);
  Py_DECREF(nested_python);
  Py_DECREF(py_entry);
  Py_DECREF(py_warmup);
  Py_DECREF(module);
}

static long long worker_ns[2];

static void *py_worker(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "py-worker");
  PyGILState_STATE g = PyGILState_Ensure();
  PyObject *module = python_module();
  PyObject *py_warmup = python_function(module, "py_warmup");
  PyObject *py_entry = python_function(module, "py_entry");
  long long end = thread_ns() + WARMUP_NS;
  while (thread_ns() < end) call_python(py_warmup);
  long long start = thread_ns();
  end = start + measured_ns;
  while (thread_ns() < end) call_python(py_entry);
  worker_ns[0] = thread_ns() - start;
  Py_DECREF(py_entry);
  Py_DECREF(py_warmup);
  Py_DECREF(module);
  PyGILState_Release(g);
  return NULL;
}

static void *lua_worker(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "lua-worker");
  lua_State *L = lua_state();
  long long end = thread_ns() + WARMUP_NS;
  while (thread_ns() < end) call_lua(L, "lua_warmup");
  long long start = thread_ns();
  end = start + measured_ns;
  while (thread_ns() < end) call_lua(L, "lua_entry");
  worker_ns[1] = thread_ns() - start;
  lua_close(L);
  return NULL;
}

static void threads(const char *out) {
  PyThreadState *main_state = PyEval_SaveThread(); /* the GIL is py-worker's from here */
  pthread_t py, lua;
  if (pthread_create(&py, NULL, py_worker, NULL) != 0) die("pthread_create");
  if (pthread_create(&lua, NULL, lua_worker, NULL) != 0) die("pthread_create");
  pthread_join(py, NULL);
  pthread_join(lua, NULL);
  PyEval_RestoreThread(main_state);
  write_out(out, worker_ns[0], worker_ns[1]);
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s alternate|threads|nested PY LUA SECONDS OUT\n", argv[0]);
    return 2;
  }
  py_path = argv[2];
  lua_path = argv[3];
  measured_ns = (long long)(atof(argv[4]) * 1e9);
  PyImport_AppendInittab("host", init_host);
  Py_Initialize();
  if (strcmp(argv[1], "alternate") == 0) {
    alternate(argv[5], "py_entry", "lua_entry");
  } else if (strcmp(argv[1], "nested") == 0) {
    alternate(argv[5], "py_outer", "lua_outer");
  } else if (strcmp(argv[1], "threads") == 0) {
    threads(argv[5]);
  } else {
    die("the mode is alternate, threads or nested");
  }
  return Py_FinalizeEx() < 0 ? 1 : 0;
}
