// A C++ library for the --native tests: a namespace, a class template
// and a function template, whose frames must read demangled.
#include <cstddef>

namespace geo {

volatile unsigned long sink;

template <typename T> struct Grid {
	__attribute__((noinline)) void fill(std::size_t n)
	{
		for (std::size_t i = 0; i < n; i++)
			sink += static_cast<unsigned long>(static_cast<T>(i) * 3);
	}
};

template <typename T> __attribute__((noinline)) void paint(std::size_t n)
{
	Grid<T> g;
	g.fill(n);
	sink++;
}

} // namespace geo

extern "C" void shapes_burn(unsigned long n)
{
	geo::paint<double>(n);
}
