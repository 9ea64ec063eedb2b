"""PyTorch's CPU top-k order among equal values: libstdc++'s nth_element, sort and
partial_sort (introselect / introsort with median-of-three pivots, insertion sort for
short ranges, heap select), replayed on one row of (value, index) pairs so that ties come
out in the order PyTorch's `topk` reports them. Used only on rows where ties make the
order ambiguous; elsewhere any sort gives the same indices."""

from __future__ import annotations


def _greater(x, y):
    return (x != x and y == y) or x > y  # NaN above everything


def _smaller(x, y):
    return (x == x and y != y) or x < y


def _lg(n: int) -> int:
    return n.bit_length() - 1


class _Seq:
    """A list of (value, index) pairs and the libstdc++ algorithms on it, ordered by `less`
    on the values (positions are list indices; `last` is one past the end, as in C++)."""

    def __init__(self, a: list, less) -> None:
        self.a, self.less = a, less

    def comp(self, i: int, j: int) -> bool:
        return self.less(self.a[i][0], self.a[j][0])

    def swap(self, i: int, j: int) -> None:
        a = self.a
        a[i], a[j] = a[j], a[i]

    def move_median_to_first(self, r: int, a: int, b: int, c: int) -> None:
        cm = self.comp
        if cm(a, b):
            self.swap(r, b if cm(b, c) else c if cm(a, c) else a)
        else:
            self.swap(r, a if cm(a, c) else c if cm(b, c) else b)

    def unguarded_partition(self, first: int, last: int, pivot: int) -> int:
        cm = self.comp
        while True:
            while cm(first, pivot):
                first += 1
            last -= 1
            while cm(pivot, last):
                last -= 1
            if not first < last:
                return first
            self.swap(first, last)
            first += 1

    def partition_pivot(self, first: int, last: int) -> int:
        mid = first + (last - first) // 2
        self.move_median_to_first(first, first + 1, mid, last - 1)
        return self.unguarded_partition(first + 1, last, first)

    def unguarded_linear_insert(self, last: int) -> None:
        a, less = self.a, self.less
        val = a[last]
        nxt = last - 1
        while less(val[0], a[nxt][0]):
            a[last] = a[nxt]
            last, nxt = nxt, nxt - 1
        a[last] = val

    def insertion_sort(self, first: int, last: int) -> None:
        a, less = self.a, self.less
        for i in range(first + 1, last):
            if less(a[i][0], a[first][0]):
                val = a[i]
                a[first + 1:i + 1] = a[first:i]
                a[first] = val
            else:
                self.unguarded_linear_insert(i)

    def adjust_heap(self, first: int, hole: int, length: int, value) -> None:
        a, less = self.a, self.less
        top = child = hole
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if less(a[first + child][0], a[first + child - 1][0]):
                child -= 1
            a[first + hole] = a[first + child]
            hole = child
        if (length & 1) == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            a[first + hole] = a[first + child - 1]
            hole = child - 1
        parent = (hole - 1) // 2  # push_heap
        while hole > top and less(a[first + parent][0], value[0]):
            a[first + hole] = a[first + parent]
            hole = parent
            parent = (hole - 1) // 2
        a[first + hole] = value

    def make_heap(self, first: int, last: int) -> None:
        length = last - first
        for parent in range((length - 2) // 2, -1, -1) if length >= 2 else ():
            self.adjust_heap(first, parent, length, self.a[first + parent])

    def pop_heap(self, first: int, last: int, result: int) -> None:
        value = self.a[result]
        self.a[result] = self.a[first]
        self.adjust_heap(first, 0, last - first, value)

    def heap_select(self, first: int, middle: int, last: int) -> None:
        self.make_heap(first, middle)
        for i in range(middle, last):
            if self.comp(i, first):
                self.pop_heap(first, middle, i)

    def sort_heap(self, first: int, last: int) -> None:
        while last - first > 1:
            last -= 1
            self.pop_heap(first, last, last)

    def nth_element(self, first: int, nth: int, last: int) -> None:
        if first == last or nth == last:
            return
        depth = 2 * _lg(last - first)
        while last - first > 3:
            if depth == 0:
                self.heap_select(first, nth + 1, last)
                self.swap(first, nth)
                return
            depth -= 1
            cut = self.partition_pivot(first, last)
            if cut <= nth:
                first = cut
            else:
                last = cut
        self.insertion_sort(first, last)

    def introsort_loop(self, first: int, last: int, depth: int) -> None:
        while last - first > 16:
            if depth == 0:
                self.partial_sort(first, last, last)
                return
            depth -= 1
            cut = self.partition_pivot(first, last)
            self.introsort_loop(cut, last, depth)
            last = cut

    def sort(self, first: int, last: int) -> None:
        if first == last:
            return
        self.introsort_loop(first, last, 2 * _lg(last - first))
        if last - first > 16:
            self.insertion_sort(first, first + 16)
            for i in range(first + 16, last):
                self.unguarded_linear_insert(i)
        else:
            self.insertion_sort(first, last)

    def partial_sort(self, first: int, middle: int, last: int) -> None:
        self.heap_select(first, middle, last)
        self.sort_heap(first, middle)


def topk_row(row: list, k: int, largest: bool = True, sorted_: bool = True) -> list:
    """The indices PyTorch's CPU topk returns for one row (a list of floats): partial_sort
    when k * 64 <= n, else nth_element then (sorted) a sort of the first k - 1."""
    n = len(row)
    s = _Seq([(v, i) for i, v in enumerate(row)], _greater if largest else _smaller)
    if k * 64 <= n:
        s.partial_sort(0, k, n)
    else:
        s.nth_element(0, k - 1, n)
        if sorted_:
            s.sort(0, k - 1)
    return [i for _, i in s.a[:k]]


def _less(x, y):
    return x < y


def mode_row(row: list) -> int:
    """The index PyTorch's CPU `mode` returns for one row (a list of numbers without NaN):
    its kernel sorts (value, index) pairs by value with std::sort, which is not stable past
    16 entries, and takes the index at the end of the (first) longest run of equal values."""
    n = len(row)
    s = _Seq([(v, i) for i, v in enumerate(row)], _less)
    s.sort(0, n)
    a = s.a
    best, freq, run = 0, 0, 0
    for i in range(n):
        run += 1
        if i == n - 1 or a[i][0] != a[i + 1][0]:
            if run > freq:
                best, freq = a[i][1], run
            run = 0
    return best
