/* A library whose victim_wait blocks in read(2) under victim_entry: the frames the debug-file
 * tests name. Used by host's DebugFileSymbolsTest and e2e's TargetFilesTest. */
#include <unistd.h>
static __attribute__((noinline)) int victim_wait(int fd) {
  char c;
  return (int) read(fd, &c, 1) + 1;
}
int victim_entry(int fd) { return victim_wait(fd) * 2; }
