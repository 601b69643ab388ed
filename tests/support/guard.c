#define _DEFAULT_SOURCE
#include "guard.h"

#include <criterion/criterion.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void
zt_guard_init(struct zt_guard *g, size_t cap)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t data_pages = (cap + page - 1) / page;

	if (data_pages == 0)
		data_pages = 1;
	g->map_len = (data_pages + 1) * page;
	g->map = mmap(NULL, g->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert(g->map != MAP_FAILED, "mmap of %zu bytes failed", g->map_len);
	g->end = g->map + data_pages * page;
	g->cap = data_pages * page;
	cr_assert(mprotect(g->end, page, PROT_NONE) == 0, "mprotect of the guard page failed");
}

void
zt_guard_fini(struct zt_guard *g)
{
	if (g->map != NULL)
		munmap(g->map, g->map_len);
	memset(g, 0, sizeof(*g));
}

uint8_t *
zt_guard_place(struct zt_guard *g, const void *data, size_t n)
{
	uint8_t *p;

	cr_assert(n <= g->cap, "guard buffer holds %zu bytes, asked for %zu", g->cap, n);
	p = g->end - n;
	if (n > 0)
		memmove(p, data, n);
	return p;
}
