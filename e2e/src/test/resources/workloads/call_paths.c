/*
 * record --event calls: counted_leaf() is called N times (argv[1]), 3 of every 4 calls through
 * path_big() and 1 through path_small(), so the stacks at its calls have known shares.
 */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) void counted_leaf(unsigned long i)
{
	sink += i;
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void path_big(unsigned long i)
{
	counted_leaf(i);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void path_small(unsigned long i)
{
	counted_leaf(i);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;

	for (unsigned long i = 0; i < n; i++) {
		if (i % 4 == 3)
			path_small(i);
		else
			path_big(i);
	}
	printf("done %lu\n", sink);
	return 0;
}
