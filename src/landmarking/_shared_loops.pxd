"""Loops that several compiled modules run: heaps of the k smallest values, and dot
products and squared distances summed in a fixed number of partial sums.

Each is an inline function, compiled into every module that cimports it
(``from landmarking._shared_loops cimport ...``), so a call costs what the loop
written in place cost. Each fixes its order of operations: the lanes, the order in
which they are added and where the tail goes. That order decides the last bits of a
result, so the variants below differ on purpose: :func:`lane_dot` and
:func:`lane_sq_distance` (LLL's weights) add 8 lanes as a tree with the tail inside
the lanes, :func:`ordered_lane_dot` (the GP steps) adds 8 lanes in order and then
the tail, and :func:`wide_lane_sq_distance` (the exact neighbour re-rank) has 16
lanes. Merging two of them would change the results of one method; each is written
once, here. The build has no -ffast-math and no FMA contraction (setup.py), so the
compiler keeps every order as written.
"""

from libc.stdint cimport int64_t

ctypedef fused real_x:
    float
    double

ctypedef fused real_t:
    float
    double

cdef enum:
    # Partial sums of lane_dot, lane_sq_distance and ordered_lane_dot (two AVX2
    # vector registers of float64); the loops over them name the same number, as
    # Cython's range needs a literal step to compile to a C loop.
    LANES = 8
    # Partial sums of wide_lane_sq_distance.
    WIDE_LANES = 16


# ---------------------------------------------------------------- heaps

cdef inline bint pair_before(double va, Py_ssize_t ja, double vb,
                             Py_ssize_t jb) noexcept nogil:
    """(va, ja) < (vb, jb): by value, ties by index."""
    return va < vb or (va == vb and ja < jb)


cdef inline void pair_sift_down(double* hv, Py_ssize_t* hj, Py_ssize_t pos,
                                Py_ssize_t size) noexcept nogil:
    """Restore a max-heap on (hv, hj) pairs, ordered by :func:`pair_before`, below
    ``pos``."""
    cdef Py_ssize_t child, right
    while True:
        child = 2 * pos + 1
        if child >= size:
            return
        right = child + 1
        if right < size and pair_before(hv[child], hj[child], hv[right], hj[right]):
            child = right
        if pair_before(hv[pos], hj[pos], hv[child], hj[child]):
            hv[pos], hv[child] = hv[child], hv[pos]
            hj[pos], hj[child] = hj[child], hj[pos]
            pos = child
        else:
            return


cdef inline void pair_offer(double* hv, Py_ssize_t* hj, Py_ssize_t k, Py_ssize_t j,
                            double v) noexcept nogil:
    """Offer (v, j), the j-th of a row's values in order, to the max-heap of the k
    smallest (value, index) pairs seen: the first k fill it, then a smaller value
    replaces the top (an equal one has the larger index and stays out)."""
    cdef Py_ssize_t pos
    if j < k:
        hv[j] = v
        hj[j] = j
        if j == k - 1:
            for pos in range(k // 2 - 1, -1, -1):
                pair_sift_down(hv, hj, pos, k)
    elif v < hv[0]:
        hv[0] = v
        hj[0] = j
        pair_sift_down(hv, hj, 0, k)


cdef inline void pair_smallest(const double* row, Py_ssize_t n, Py_ssize_t c, double* hv,
                               Py_ssize_t* hj) noexcept nogil:
    """The c smallest (row[j], j) of row[:n] into the max-heap hv, hj (see
    :func:`pair_offer`); after the first c, one comparison for most values."""
    cdef Py_ssize_t j
    for j in range(c):
        pair_offer(hv, hj, c, j, row[j])
    for j in range(c, n):
        if row[j] < hv[0]:
            pair_offer(hv, hj, c, j, row[j])


cdef inline void pair_heap_sort(double* hv, Py_ssize_t* hj, Py_ssize_t k) noexcept nogil:
    """Sort a max-heap of k pairs in place, smallest first."""
    cdef Py_ssize_t end
    for end in range(k - 1, 0, -1):
        hv[0], hv[end] = hv[end], hv[0]
        hj[0], hj[end] = hj[end], hj[0]
        pair_sift_down(hv, hj, 0, end)


cdef inline void pair_sort(double* v, Py_ssize_t* j, Py_ssize_t n) noexcept nogil:
    """Sort n (value, index) pairs in place by value, ties by index (heap sort)."""
    cdef Py_ssize_t pos
    for pos in range(n // 2 - 1, -1, -1):
        pair_sift_down(v, j, pos, n)
    pair_heap_sort(v, j, n)


cdef inline void value_sift_down(double* vals, int64_t* idx, Py_ssize_t size) noexcept nogil:
    """Restore the max-heap property of vals[:size] below its top (position 0), by
    value alone: an equal child stays below (the neighbour search's heaps, whose
    ties the caller orders by index afterwards)."""
    cdef Py_ssize_t i = 0, left, big
    cdef double v
    cdef int64_t c
    while True:
        left = 2 * i + 1
        if left >= size:
            return
        big = left
        if left + 1 < size and vals[left + 1] > vals[left]:
            big = left + 1
        if vals[big] <= vals[i]:
            return
        v = vals[i]
        vals[i] = vals[big]
        vals[big] = v
        c = idx[i]
        idx[i] = idx[big]
        idx[big] = c
        i = big


# ---------------------------------------------------------------- dot products

cdef inline double lane_dot(const real_x* x, const real_t* t, Py_ssize_t d) noexcept nogil:
    """x.t in float64, summed in LANES fixed lanes (the order that vectorises, the
    same on every processor and thread count), the tail into the first lanes, the
    lanes then added in pairs."""
    cdef double lane[LANES]
    cdef Py_ssize_t f, u, end = d - d % LANES
    for u in range(LANES):
        lane[u] = 0.0
    f = 0
    while f < end:
        for u in range(LANES):
            lane[u] += <double>x[f + u] * <double>t[f + u]
        f += LANES
    for f in range(end, d):
        lane[f - end] += <double>x[f] * <double>t[f]
    return (((lane[0] + lane[1]) + (lane[2] + lane[3]))
            + ((lane[4] + lane[5]) + (lane[6] + lane[7])))


cdef inline double lane_sq_distance(const real_x* x, const real_t* t,
                                    Py_ssize_t d) noexcept nogil:
    """|x - t|^2 in float64 from the differences, in the lanes of :func:`lane_dot`."""
    cdef double lane[LANES]
    cdef double v
    cdef Py_ssize_t f, u, end = d - d % LANES
    for u in range(LANES):
        lane[u] = 0.0
    f = 0
    while f < end:
        for u in range(LANES):
            v = <double>x[f + u] - <double>t[f + u]
            lane[u] += v * v
        f += LANES
    for f in range(end, d):
        v = <double>x[f] - <double>t[f]
        lane[f - end] += v * v
    return (((lane[0] + lane[1]) + (lane[2] + lane[3]))
            + ((lane[4] + lane[5]) + (lane[6] + lane[7])))


cdef inline double ordered_lane_dot(const real_x* x, const double* y,
                                    Py_ssize_t n) noexcept nogil:
    """x . y in float64 for x in float32 or float64: LANES partial sums, added in
    order, then the products of the tail in order."""
    cdef double a[LANES]
    cdef double s = 0
    cdef Py_ssize_t c, l
    cdef Py_ssize_t end = n - n % LANES
    for l in range(LANES):
        a[l] = 0
    for c in range(0, end, 8):
        for l in range(LANES):
            a[l] += <double>x[c + l] * y[c + l]
    for l in range(LANES):
        s += a[l]
    for c in range(end, n):
        s += <double>x[c] * y[c]
    return s


cdef inline double wide_lane_sq_distance(const double* q, const real_x* x,
                                         Py_ssize_t d) noexcept nogil:
    """|q - x|^2 over d features, in float64 from the differences.

    From WIDE_LANES features on, summed in WIDE_LANES independent partial sums
    (feature f into sum f % WIDE_LANES) added pairwise at the end (sum l with sum
    l + 8, then l + 4, l + 2, l + 1); fewer features in one running sum. Either is a
    fixed order, whatever the thread or the processor, and the first is one that the
    compiler keeps in vector registers (without -ffast-math a single running sum
    would not vectorise). Equal rows give bit-equal distances, so ties stay ties.
    """
    cdef double acc[WIDE_LANES]
    cdef double t, s = 0.0
    cdef Py_ssize_t block, f, lane, whole = d - d % WIDE_LANES
    if d < WIDE_LANES:
        for f in range(d):
            t = q[f] - <double>x[f]
            s += t * t
        return s
    for lane in range(WIDE_LANES):
        acc[lane] = 0.0
    for block in range(d // WIDE_LANES):
        f = block * WIDE_LANES
        for lane in range(WIDE_LANES):
            t = q[f + lane] - <double>x[f + lane]
            acc[lane] += t * t
    for lane in range(d - whole):
        t = q[whole + lane] - <double>x[whole + lane]
        acc[lane] += t * t
    for lane in range(8):
        acc[lane] += acc[lane + 8]
    for lane in range(4):
        acc[lane] += acc[lane + 4]
    for lane in range(2):
        acc[lane] += acc[lane + 2]
    return acc[0] + acc[1]
