/* Embeds LuaJIT through the C API: Lua calls the C function c_apply, which calls back into Lua. */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;

/* C work between the callbacks, kept out of line so it shows as its own frame. */
__attribute__((noinline)) static double c_mix(int i) {
  double acc = 0;
  for (int k = 0; k < 4000; k++) {
    acc += (double)(k ^ i) * 0.5;
  }
  return acc;
}

/* c_apply(f, n): calls f(i) n times, mixing in C work. */
__attribute__((noinline)) static int c_apply(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  int n = (int)luaL_checkinteger(L, 2);
  double acc = 0;
  for (int i = 0; i < n; i++) {
    acc += c_mix(i);
    lua_pushvalue(L, 1);
    lua_pushinteger(L, i);
    lua_call(L, 1, 1);
    acc += lua_tonumber(L, -1);
    lua_pop(L, 1);
  }
  sink = acc;
  lua_pushnumber(L, acc);
  return 1;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s SCRIPT SECONDS\n", argv[0]);
    return 2;
  }
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  lua_register(L, "c_apply", c_apply);
  if (luaL_loadfile(L, argv[1]) != 0 || lua_pcall(L, 0, 0, 0) != 0) {
    fprintf(stderr, "load: %s\n", lua_tostring(L, -1));
    return 1;
  }
  double end = now() + atof(argv[2]);
  long calls = 0;
  while (now() < end) {
    lua_getglobal(L, "run");
    if (lua_pcall(L, 0, 1, 0) != 0) {
      fprintf(stderr, "run: %s\n", lua_tostring(L, -1));
      return 1;
    }
    lua_pop(L, 1);
    calls++;
  }
  lua_close(L);
  printf("calls %ld\n", calls);
  return 0;
}
