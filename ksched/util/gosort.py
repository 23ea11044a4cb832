"""Go's ``sort.Slice`` (pattern-defeating quicksort), step for step.

Why a port instead of ``list.sort``: kube-scheduler sorts preemption victims with a
comparator that is not a strict weak order — two pods without ``status.startTime`` each
get ``time.Now()`` at comparison time, so whichever is asked about first counts as older
and ``less(a, b)`` and ``less(b, a)`` are both true. The order that comes out is then
whatever Go's algorithm makes of it (for up to 12 items: the tie group reversed), and
which pods survive preemption depends on it. Only the same algorithm, asking the same
questions in the same order, gives the same victims.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

__all__ = ["MAX_INSERTION", "sort_slice"]

T = TypeVar("T")

# Go's pdqsort sorts up to this many elements by insertion sort (maxInsertion)
MAX_INSERTION = 12
_SHORTEST_NINTHER = 50
_MAX_SWAPS = 4 * 3
_MAX_STEPS = 5
_SHORTEST_SHIFTING = 50
_MASK64 = (1 << 64) - 1

_UNKNOWN, _INCREASING, _DECREASING = 0, 1, 2


def sort_slice(data: list[T], less: Callable[[T, T], bool]) -> None:
    """Sort ``data`` in place exactly as Go's ``sort.Slice(data, less)`` would: unstable,
    and with the same calls to ``less`` in the same order."""
    _Sorter(data, less).run()


class _Sorter:
    __slots__ = ("d", "lt")

    def __init__(self, data: list[T], less: Callable[[T, T], bool]) -> None:
        self.d: list[object] = data  # type: ignore[assignment]
        self.lt: Callable[[object, object], bool] = less  # type: ignore[assignment]

    def less(self, i: int, j: int) -> bool:
        d = self.d
        return self.lt(d[i], d[j])

    def swap(self, i: int, j: int) -> None:
        d = self.d
        d[i], d[j] = d[j], d[i]

    def run(self) -> None:
        n = len(self.d)
        self.pdqsort(0, n, n.bit_length())

    def insertion_sort(self, a: int, b: int) -> None:
        for i in range(a + 1, b):
            j = i
            while j > a and self.less(j, j - 1):
                self.swap(j, j - 1)
                j -= 1

    def sift_down(self, lo: int, hi: int, first: int) -> None:
        root = lo
        while True:
            child = 2 * root + 1
            if child >= hi:
                return
            if child + 1 < hi and self.less(first + child, first + child + 1):
                child += 1
            if not self.less(first + root, first + child):
                return
            self.swap(first + root, first + child)
            root = child

    def heap_sort(self, a: int, b: int) -> None:
        first, lo, hi = a, 0, b - a
        for i in range((hi - 1) // 2, -1, -1):
            self.sift_down(i, hi, first)
        for i in range(hi - 1, -1, -1):
            self.swap(first, first + i)
            self.sift_down(lo, i, first)

    def pdqsort(self, a: int, b: int, limit: int) -> None:
        was_balanced = True
        was_partitioned = True
        while True:
            length = b - a
            if length <= MAX_INSERTION:
                self.insertion_sort(a, b)
                return
            if limit == 0:
                self.heap_sort(a, b)
                return
            if not was_balanced:
                self.break_patterns(a, b)
                limit -= 1
            pivot, hint = self.choose_pivot(a, b)
            if hint == _DECREASING:
                self.reverse_range(a, b)
                pivot = (b - 1) - (pivot - a)
                hint = _INCREASING
            if (
                was_balanced
                and was_partitioned
                and hint == _INCREASING
                and self.partial_insertion_sort(a, b)
            ):
                return
            if a > 0 and not self.less(a - 1, pivot):
                a = self.partition_equal(a, b, pivot)
                continue
            mid, already = self.partition(a, b, pivot)
            was_partitioned = already
            left, right = mid - a, b - mid
            threshold = length // 8
            if left < right:
                was_balanced = left >= threshold
                self.pdqsort(a, mid, limit)
                a = mid + 1
            else:
                was_balanced = right >= threshold
                self.pdqsort(mid + 1, b, limit)
                b = mid

    def partition(self, a: int, b: int, pivot: int) -> tuple[int, bool]:
        self.swap(a, pivot)
        i, j = a + 1, b - 1
        while i <= j and self.less(i, a):
            i += 1
        while i <= j and not self.less(j, a):
            j -= 1
        if i > j:
            self.swap(j, a)
            return j, True
        self.swap(i, j)
        i += 1
        j -= 1
        while True:
            while i <= j and self.less(i, a):
                i += 1
            while i <= j and not self.less(j, a):
                j -= 1
            if i > j:
                break
            self.swap(i, j)
            i += 1
            j -= 1
        self.swap(j, a)
        return j, False

    def partition_equal(self, a: int, b: int, pivot: int) -> int:
        self.swap(a, pivot)
        i, j = a + 1, b - 1
        while True:
            while i <= j and not self.less(a, i):
                i += 1
            while i <= j and self.less(a, j):
                j -= 1
            if i > j:
                return i
            self.swap(i, j)
            i += 1
            j -= 1

    def partial_insertion_sort(self, a: int, b: int) -> bool:
        i = a + 1
        for _ in range(_MAX_STEPS):
            while i < b and not self.less(i, i - 1):
                i += 1
            if i == b:
                return True
            if b - a < _SHORTEST_SHIFTING:
                return False
            self.swap(i, i - 1)
            if i - a >= 2:
                for j in range(i - 1, 0, -1):
                    if not self.less(j, j - 1):
                        break
                    self.swap(j, j - 1)
            if b - i >= 2:
                for j in range(i + 1, b):
                    if not self.less(j, j - 1):
                        break
                    self.swap(j, j - 1)
        return False

    def break_patterns(self, a: int, b: int) -> None:
        length = b - a
        if length < 8:
            return
        r = length & _MASK64
        modulus = 1 << length.bit_length()
        start = a + (length // 4) * 2 - 1
        for idx in range(start, start + 3):
            r ^= (r << 13) & _MASK64
            r ^= r >> 7
            r ^= (r << 17) & _MASK64
            other = r & (modulus - 1)
            if other >= length:
                other -= length
            self.swap(idx, a + other)

    def choose_pivot(self, a: int, b: int) -> tuple[int, int]:
        n = b - a
        swaps = [0]
        i, j, k = a + n // 4, a + n // 4 * 2, a + n // 4 * 3
        if n >= 8:
            if n >= _SHORTEST_NINTHER:
                i = self.median(i - 1, i, i + 1, swaps)
                j = self.median(j - 1, j, j + 1, swaps)
                k = self.median(k - 1, k, k + 1, swaps)
            j = self.median(i, j, k, swaps)
        if swaps[0] == 0:
            return j, _INCREASING
        if swaps[0] == _MAX_SWAPS:
            return j, _DECREASING
        return j, _UNKNOWN

    def median(self, a: int, b: int, c: int, swaps: list[int]) -> int:
        a, b = self.order2(a, b, swaps)
        b, c = self.order2(b, c, swaps)
        a, b = self.order2(a, b, swaps)
        return b

    def order2(self, a: int, b: int, swaps: list[int]) -> tuple[int, int]:
        if self.less(b, a):
            swaps[0] += 1
            return b, a
        return a, b

    def reverse_range(self, a: int, b: int) -> None:
        i, j = a, b - 1
        while i < j:
            self.swap(i, j)
            i += 1
            j -= 1
