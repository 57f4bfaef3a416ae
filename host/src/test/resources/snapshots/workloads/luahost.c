/*
 * Runs a Lua file in a LuaJIT linked as a shared library (OpenResty's luajit2 in the corpus).
 * An optional second argument is a Lua chunk run first (record-corpus.sh starts its name
 * oracle with it).
 */
#include <stdio.h>
#include <lauxlib.h>
#include <lualib.h>

int main(int argc, char **argv) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  if (argc > 2 && luaL_dostring(L, argv[2])) {
    fprintf(stderr, "%s\n", lua_tostring(L, -1));
    return 1;
  }
  if (argc < 2 || luaL_dofile(L, argv[1])) {
    fprintf(stderr, "%s\n", argc < 2 ? "usage: luahost FILE [INIT]" : lua_tostring(L, -1));
    return 1;
  }
  return 0;
}
