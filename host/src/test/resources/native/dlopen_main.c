/* Loads the library named by argv[1], says ready, and calls its victim_entry(0) (blocks on
 * stdin). Used by host's DebugFileSymbolsTest and e2e's TargetFilesTest. */
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
  void *h = dlopen(argv[1], RTLD_NOW);
  if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
  int (*entry)(int) = (int (*)(int)) dlsym(h, "victim_entry");
  printf("ready\n");
  fflush(stdout);
  return entry(0) == 4 ? 0 : 2;
}
