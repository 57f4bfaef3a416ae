/* Runs a Lua file in a LuaJIT linked as a shared library (OpenResty's luajit2 in the corpus). */
#include <stdio.h>
#include <lauxlib.h>
#include <lualib.h>

int main(int argc, char **argv) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  if (argc < 2 || luaL_dofile(L, argv[1])) {
    fprintf(stderr, "%s\n", argc < 2 ? "usage: luahost FILE" : lua_tostring(L, -1));
    return 1;
  }
  return 0;
}
