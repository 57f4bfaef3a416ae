/*
 * Anonymous memory mapped by the program itself for record --event alloc: each round, map_big
 * maps three 64 KiB blocks and map_small one, with mmap(MAP_PRIVATE | MAP_ANONYMOUS), and
 * unmaps them, except map_small's block of the last KEEP rounds (argv[2]); big_malloc takes a
 * 1 MiB block with malloc, which glibc serves with its own mmap (that call must not count a
 * second time), and a file mapping of /proc/self/exe is made and unmapped (not anonymous: not
 * counted). ROUNDS is argv[1].
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define BLOCK (64 * 1024)

static volatile long sink;

__attribute__((noinline)) void *map_big(void)
{
	void *p = mmap(NULL, BLOCK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	sink += (long)p;
	return p;
}

__attribute__((noinline)) void *map_small(void)
{
	void *p = mmap(NULL, BLOCK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	sink += (long)p;
	return p;
}

__attribute__((noinline)) void *big_malloc(void)
{
	void *p = malloc(1 << 20);
	sink += (long)p;
	return p;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 100;
	long keep = argc > 2 ? atol(argv[2]) : 0;
	int fd = open("/proc/self/exe", O_RDONLY);

	if (fd < 0)
		return 3;
	for (long i = 0; i < rounds; i++) {
		void *b[3];
		for (int k = 0; k < 3; k++)
			b[k] = map_big();
		void *s = map_small();
		void *m = big_malloc();
		void *f = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
		if (b[0] == MAP_FAILED || s == MAP_FAILED || !m || f == MAP_FAILED)
			return 4;
		for (int k = 0; k < 3; k++)
			munmap(b[k], BLOCK);
		if (i < rounds - keep)
			munmap(s, BLOCK);
		free(m);
		munmap(f, 4096);
	}
	printf("done\n");
	return 0;
}
