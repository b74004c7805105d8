"""The corpus of benchmarks/efficiency_signal.py: pairs of correct programs for real MBPP / HumanEval problems.

``TIME_PAIRS``: (benchmark, task id, faster, slower) where the slower program does genuinely more work for the
same answers (exponential recursion instead of a loop or DP, trial division instead of a sieve, O(n^3)
enumeration instead of a linear scan, ...). ``MEMORY_PAIRS``: (benchmark, task id, smaller, larger) where
the larger program materializes data the smaller one streams or never builds. The script checks that every
program passes its problem's tests and prints each pair's measured ratio.

``MODULE_PAIRS``: (benchmark, task id, in-function, module-level) twins doing the same work once per
execution, the module-level one at import time. ``RENAMED``: (benchmark, task id, program, twin) pairs that
differ only in names (different normalized source, so measured separately: their differences are noise).
"""

# ----------------------------------------------------------------------------------------------- time
TIME_PAIRS = [
    ("mbpp", "mbpp/5", """
def count_ways(n):
    a, b = [0] * (n + 1), [0] * (n + 1)
    a[0], b[1] = 1, 1
    for i in range(2, n + 1):
        a[i] = a[i - 2] + 2 * b[i - 1]
        b[i] = a[i - 1] + b[i - 2]
    return a[n]
""", """
def count_ways(n):
    def a(k):
        if k == 0:
            return 1
        if k == 1:
            return 0
        return a(k - 2) + 2 * b(k - 1)
    def b(k):
        if k == 0:
            return 0
        if k == 1:
            return 1
        return a(k - 1) + b(k - 2)
    return a(n)
"""),
    ("mbpp", "mbpp/739", """
import math
def find_Index(n):
    return math.ceil((math.sqrt(8 * 10 ** (n - 1)) - 1) / 2)
""", """
def find_Index(n):
    k = 1
    while len(str(k * (k + 1) // 2)) < n:
        k += 1
    return k
"""),
    ("mbpp", "mbpp/67", """
def bell_number(n):
    row = [1]
    for _ in range(n):
        nxt = [row[-1]]
        for v in row:
            nxt.append(nxt[-1] + v)
        row = nxt
    return row[0]
""", """
from math import factorial
def bell_number(n):
    b = [1]
    for m in range(n):
        b.append(sum(factorial(m) // (factorial(k) * factorial(m - k)) * b[k] for k in range(m + 1)))
    return b[n]
"""),
    ("mbpp", "mbpp/84", """
def sequence(n):
    p = [0, 1, 1]
    for i in range(3, n + 1):
        p.append(p[p[i - 1]] + p[i - p[i - 1]])
    return p[n]
""", """
def sequence(n):
    if n == 1 or n == 2:
        return 1
    return sequence(sequence(n - 1)) + sequence(n - sequence(n - 1))
"""),
    ("mbpp", "mbpp/61", """
from collections import defaultdict
def count_Substrings(s, n):
    seen = defaultdict(int)
    seen[0] = 1
    total = count = 0
    for i, ch in enumerate(s):
        total += int(ch)
        key = total - (i + 1)
        count += seen[key]
        seen[key] += 1
    return count
""", """
def count_Substrings(s, n):
    count = 0
    for i in range(n):
        for j in range(i + 1, n + 1):
            if sum(int(c) for c in s[i:j]) == j - i:
                count += 1
    return count
"""),
    ("mbpp", "mbpp/256", """
def count_Primes_nums(n):
    if n < 3:
        return 0
    sieve = bytearray([1]) * n
    sieve[0] = sieve[1] = 0
    for i in range(2, int(n ** 0.5) + 1):
        if sieve[i]:
            sieve[i * i::i] = bytearray(len(range(i * i, n, i)))
    return sum(sieve)
""", """
def count_Primes_nums(n):
    count = 0
    for i in range(2, n):
        if all(i % d for d in range(2, i)):
            count += 1
    return count
"""),
    ("mbpp", "mbpp/291", """
def count_no_of_ways(n, k):
    same, diff = 0, k
    for _ in range(n - 1):
        same, diff = diff, (same + diff) * (k - 1)
    return same + diff
""", """
from itertools import product
def count_no_of_ways(n, k):
    count = 0
    for colors in product(range(k), repeat=n):
        if all(not (colors[i] == colors[i - 1] == colors[i - 2]) for i in range(2, n)):
            count += 1
    return count
"""),
    ("mbpp", "mbpp/348", """
def find_ways(n):
    m = n // 2
    c = 1
    for i in range(m):
        c = c * 2 * (2 * i + 1) // (i + 2)
    return c
""", """
from itertools import product
def find_ways(n):
    count = 0
    for seq in product((1, -1), repeat=n):
        s, ok = 0, True
        for v in seq:
            s += v
            if s < 0:
                ok = False
                break
        if ok and s == 0:
            count += 1
    return count
"""),
    ("mbpp", "mbpp/389", """
def find_lucas(n):
    a, b = 2, 1
    for _ in range(n):
        a, b = b, a + b
    return a
""", """
def find_lucas(n):
    if n == 0:
        return 2
    if n == 1:
        return 1
    return find_lucas(n - 1) + find_lucas(n - 2)
"""),
    ("mbpp", "mbpp/448", """
def cal_sum(n):
    a, b, c = 3, 0, 2
    total = 0
    for _ in range(n + 1):
        total += a
        a, b, c = b, c, a + b
    return total
""", """
def perrin(k):
    if k == 0:
        return 3
    if k == 1:
        return 0
    if k == 2:
        return 2
    return perrin(k - 2) + perrin(k - 3)
def cal_sum(n):
    return sum(perrin(k) for k in range(n + 1))
"""),
    ("mbpp", "mbpp/524", """
def max_sum_increasing_subsequence(arr, n):
    best = arr[:]
    for i in range(n):
        for j in range(i):
            if arr[j] < arr[i] and best[j] + arr[i] > best[i]:
                best[i] = best[j] + arr[i]
    return max(best)
""", """
from itertools import combinations
def max_sum_increasing_subsequence(arr, n):
    best = 0
    for r in range(1, n + 1):
        for combo in combinations(arr, r):
            if all(combo[i] < combo[i + 1] for i in range(r - 1)):
                best = max(best, sum(combo))
    return best
"""),
    ("mbpp", "mbpp/559", """
def max_sub_array_sum(a, size):
    best = cur = a[0]
    for x in a[1:]:
        cur = max(x, cur + x)
        best = max(best, cur)
    return best
""", """
def max_sub_array_sum(a, size):
    best = a[0]
    for i in range(size):
        for j in range(i, size):
            s = 0
            for k in range(i, j + 1):
                s += a[k]
            best = max(best, s)
    return best
"""),
    ("mbpp", "mbpp/583", """
def catalan_number(num):
    c = 1
    for i in range(num):
        c = c * 2 * (2 * i + 1) // (i + 2)
    return c
""", """
def catalan_number(num):
    if num <= 1:
        return 1
    return sum(catalan_number(i) * catalan_number(num - 1 - i) for i in range(num))
"""),
    ("mbpp", "mbpp/685", """
def sum_Of_Primes(n):
    sieve = [True] * (n + 1)
    total = 0
    for i in range(2, n + 1):
        if sieve[i]:
            total += i
            for j in range(i * i, n + 1, i):
                sieve[j] = False
    return total
""", """
def sum_Of_Primes(n):
    total = 0
    for i in range(2, n + 1):
        divisors = 0
        for d in range(1, i + 1):
            if i % d == 0:
                divisors += 1
        if divisors == 2:
            total += i
    return total
"""),
    ("mbpp", "mbpp/873", """
def fibonacci(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
""", """
def fibonacci(n):
    if n == 1 or n == 2:
        return 1
    return fibonacci(n - 1) + fibonacci(n - 2)
"""),
    ("mbpp", "mbpp/895", """
def max_sum_subseq(A):
    incl, excl = 0, 0
    for x in A:
        incl, excl = excl + x, max(incl, excl)
    return max(incl, excl)
""", """
def max_sum_subseq(A):
    def best(i):
        if i >= len(A):
            return 0
        return max(A[i] + best(i + 2), best(i + 1))
    return best(0)
"""),
    ("mbpp", "mbpp/905", """
from math import comb
def sum_of_square(n):
    return comb(2 * n, n)
""", """
def binom(n, k):
    if k == 0 or k == n:
        return 1
    return binom(n - 1, k - 1) + binom(n - 1, k)
def sum_of_square(n):
    return sum(binom(n, k) ** 2 for k in range(n + 1))
"""),
    ("mbpp", "mbpp/934", """
def dealnnoy_num(n, m):
    row = [1] * (m + 1)
    for _ in range(n):
        new = [1]
        for j in range(1, m + 1):
            new.append(new[j - 1] + row[j] + row[j - 1])
        row = new
    return row[m]
""", """
def dealnnoy_num(n, m):
    if m == 0 or n == 0:
        return 1
    return dealnnoy_num(m - 1, n) + dealnnoy_num(m - 1, n - 1) + dealnnoy_num(m, n - 1)
"""),
    ("mbpp", "mbpp/274", """
def even_binomial_Coeff_Sum(n):
    return 1 << (n - 1)
""", """
def binom(n, k):
    if k == 0 or k == n:
        return 1
    return binom(n - 1, k - 1) + binom(n - 1, k)
def even_binomial_Coeff_Sum(n):
    return sum(binom(n, k) for k in range(0, n + 1, 2))
"""),
    ("mbpp", "mbpp/592", """
from math import comb
def sum_Of_product(n):
    return comb(2 * n, n - 1)
""", """
def binom(n, k):
    if k < 0 or k > n:
        return 0
    if k == 0 or k == n:
        return 1
    return binom(n - 1, k - 1) + binom(n - 1, k)
def sum_Of_product(n):
    return sum(binom(n, k) * binom(n, k + 1) for k in range(n))
"""),
    ("mbpp", "mbpp/286", """
def max_sub_array_sum_repeated(a, n, k):
    best, cur = a[0], 0
    for i in range(n * k):
        cur = max(a[i % n], cur + a[i % n])
        best = max(best, cur)
    return best
""", """
def max_sub_array_sum_repeated(a, n, k):
    b = a * k
    best = b[0]
    for i in range(len(b)):
        for j in range(i + 1, len(b) + 1):
            best = max(best, sum(b[i:j]))
    return best
"""),
    ("humaneval", "HumanEval/13", """
def greatest_common_divisor(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a
""", """
def greatest_common_divisor(a: int, b: int) -> int:
    best = 1
    for d in range(1, min(a, b) + 1):
        if a % d == 0 and b % d == 0:
            best = d
    return best
"""),
    ("humaneval", "HumanEval/31", """
def is_prime(n):
    if n < 2:
        return False
    i = 2
    while i * i <= n:
        if n % i == 0:
            return False
        i += 1
    return True
""", """
def is_prime(n):
    if n < 2:
        return False
    for k in range(2, n):
        if n % k == 0:
            return False
    return True
"""),
    ("humaneval", "HumanEval/46", """
def fib4(n: int):
    a, b, c, d = 0, 0, 2, 0
    for _ in range(n):
        a, b, c, d = b, c, d, a + b + c + d
    return a
""", """
def fib4(n: int):
    if n in (0, 1, 3):
        return 0
    if n == 2:
        return 2
    return fib4(n - 1) + fib4(n - 2) + fib4(n - 3) + fib4(n - 4)
"""),
    ("humaneval", "HumanEval/49", """
def modp(n: int, p: int):
    return pow(2, n, p)
""", """
def modp(n: int, p: int):
    r = 1
    for _ in range(n):
        r = (2 * r) % p
    return r
"""),
    ("humaneval", "HumanEval/55", """
def fib(n: int):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
""", """
def fib(n: int):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)
"""),
    ("humaneval", "HumanEval/59", """
def largest_prime_factor(n: int):
    i, last = 2, 1
    while i * i <= n:
        while n % i == 0:
            last, n = i, n // i
        i += 1
    return max(last, n) if n > 1 else last
""", """
def largest_prime_factor(n: int):
    def prime(k):
        return k > 1 and all(k % d for d in range(2, k))
    best = 1
    for j in range(2, n + 1):
        if n % j == 0 and prime(j):
            best = j
    return best
"""),
    ("humaneval", "HumanEval/63", """
def fibfib(n: int):
    a, b, c = 0, 0, 1
    for _ in range(n):
        a, b, c = b, c, a + b + c
    return a
""", """
def fibfib(n: int):
    if n < 2:
        return 0
    if n == 2:
        return 1
    return fibfib(n - 1) + fibfib(n - 2) + fibfib(n - 3)
"""),
    ("humaneval", "HumanEval/83", """
def starts_one_ends(n):
    if n == 1:
        return 1
    return 18 * 10 ** (n - 2)
""", """
def starts_one_ends(n):
    count = 0
    for x in range(10 ** (n - 1), 10 ** n):
        s = str(x)
        if s[0] == '1' or s[-1] == '1':
            count += 1
    return count
"""),
    ("humaneval", "HumanEval/114", """
def minSubArraySum(nums):
    best = cur = nums[0]
    for x in nums[1:]:
        cur = min(x, cur + x)
        best = min(best, cur)
    return best
""", """
def minSubArraySum(nums):
    best = nums[0]
    for i in range(len(nums)):
        for j in range(i, len(nums)):
            best = min(best, sum(nums[i:j + 1]))
    return best
"""),
    ("humaneval", "HumanEval/147", """
def get_max_triples(n):
    counts = [0, 0, 0]
    for i in range(1, n + 1):
        counts[(i * i - i + 1) % 3] += 1
    c0, c1 = counts[0], counts[1]
    return c0 * (c0 - 1) * (c0 - 2) // 6 + c1 * (c1 - 1) * (c1 - 2) // 6
""", """
def get_max_triples(n):
    a = [i * i - i + 1 for i in range(1, n + 1)]
    count = 0
    for i in range(n):
        for j in range(i + 1, n):
            for k in range(j + 1, n):
                if (a[i] + a[j] + a[k]) % 3 == 0:
                    count += 1
    return count
"""),
    ("humaneval", "HumanEval/96", """
def count_up_to(n):
    if n < 3:
        return []
    sieve = [True] * n
    sieve[0] = sieve[1] = False
    for i in range(2, int(n ** 0.5) + 1):
        if sieve[i]:
            for j in range(i * i, n, i):
                sieve[j] = False
    return [i for i in range(n) if sieve[i]]
""", """
def count_up_to(n):
    primes = []
    for i in range(2, n):
        if all(i % d != 0 for d in range(2, i)):
            primes.append(i)
    return primes
"""),
    ("humaneval", "HumanEval/75", """
def is_multiply_prime(a):
    count, d = 0, 2
    while d * d <= a:
        while a % d == 0:
            a //= d
            count += 1
        d += 1
    if a > 1:
        count += 1
    return count == 3
""", """
def is_multiply_prime(a):
    def is_prime(n):
        return n > 1 and all(n % j for j in range(2, n))
    for i in range(2, 101):
        if not is_prime(i):
            continue
        for j in range(2, 101):
            if not is_prime(j):
                continue
            for k in range(2, 101):
                if is_prime(k) and i * j * k == a:
                    return True
    return False
"""),
]

# --------------------------------------------------------------------------------------------- memory
MEMORY_PAIRS = [
    ("humaneval", "HumanEval/147", """
def get_max_triples(n):
    a = [i * i - i + 1 for i in range(1, n + 1)]
    count = 0
    for i in range(n):
        for j in range(i + 1, n):
            for k in range(j + 1, n):
                if (a[i] + a[j] + a[k]) % 3 == 0:
                    count += 1
    return count
""", """
def get_max_triples(n):
    a = [i * i - i + 1 for i in range(1, n + 1)]
    triples = [(a[i], a[j], a[k]) for i in range(n) for j in range(i + 1, n) for k in range(j + 1, n)]
    return len([t for t in triples if sum(t) % 3 == 0])
"""),
    ("humaneval", "HumanEval/31", """
def is_prime(n):
    if n < 2:
        return False
    for k in range(2, n):
        if n % k == 0:
            return False
    return True
""", """
def is_prime(n):
    if n < 2:
        return False
    return not any([n % k == 0 for k in range(2, n)])
"""),
    ("humaneval", "HumanEval/59", """
def largest_prime_factor(n: int):
    i, last = 2, 1
    while i * i <= n:
        while n % i == 0:
            last, n = i, n // i
        i += 1
    return max(last, n) if n > 1 else last
""", """
def largest_prime_factor(n: int):
    candidates = list(range(2, n + 1))
    factors = [j for j in candidates if n % j == 0 and all(j % d for d in range(2, j))]
    return max(factors)
"""),
    ("humaneval", "HumanEval/83", """
def starts_one_ends(n):
    count = 0
    for x in range(10 ** (n - 1), 10 ** n):
        s = str(x)
        if s[0] == '1' or s[-1] == '1':
            count += 1
    return count
""", """
def starts_one_ends(n):
    numbers = [str(x) for x in range(10 ** (n - 1), 10 ** n)]
    return len([s for s in numbers if s[0] == '1' or s[-1] == '1'])
"""),
    ("humaneval", "HumanEval/36", """
def fizz_buzz(n: int):
    count = 0
    for i in range(n):
        if i % 11 == 0 or i % 13 == 0:
            count += str(i).count('7')
    return count
""", """
def fizz_buzz(n: int):
    numbers = [str(i) for i in range(n) if i % 11 == 0 or i % 13 == 0]
    text = ''.join(numbers)
    return len([c for c in text if c == '7'])
"""),
    ("humaneval", "HumanEval/49", """
def modp(n: int, p: int):
    return pow(2, n, p)
""", """
def modp(n: int, p: int):
    powers = [2 ** k for k in range(n + 1)]
    return powers[n] % p
"""),
    ("mbpp", "mbpp/291", """
def count_no_of_ways(n, k):
    same, diff = 0, k
    for _ in range(n - 1):
        same, diff = diff, (same + diff) * (k - 1)
    return same + diff
""", """
from itertools import product
def count_no_of_ways(n, k):
    colorings = list(product(range(k), repeat=n))
    good = [c for c in colorings if all(not (c[i] == c[i - 1] == c[i - 2]) for i in range(2, n))]
    return len(good)
"""),
    ("mbpp", "mbpp/348", """
def find_ways(n):
    m = n // 2
    c = 1
    for i in range(m):
        c = c * 2 * (2 * i + 1) // (i + 2)
    return c
""", """
from itertools import product, accumulate
def find_ways(n):
    seqs = list(product((1, -1), repeat=n))
    prefix = [list(accumulate(s)) for s in seqs]
    return len([p for p in prefix if min(p) >= 0 and p[-1] == 0])
"""),
    ("mbpp", "mbpp/895", """
def max_sum_subseq(A):
    incl, excl = 0, 0
    for x in A:
        incl, excl = excl + x, max(incl, excl)
    return max(incl, excl)
""", """
from itertools import combinations
def max_sum_subseq(A):
    n = len(A)
    subsets = [c for r in range(n + 1) for c in combinations(range(n), r)]
    ok = [c for c in subsets if all(c[i + 1] - c[i] > 1 for i in range(len(c) - 1))]
    return max(sum(A[i] for i in c) for c in ok)
"""),
    ("mbpp", "mbpp/256", """
def count_Primes_nums(n):
    count = 0
    for i in range(2, n):
        if all(i % d for d in range(2, i)):
            count += 1
    return count
""", """
def count_Primes_nums(n):
    table = [[i % d for d in range(2, i)] for i in range(2, n)]
    return len([row for row in table if all(row)])
"""),
    ("mbpp", "mbpp/589", """
def perfect_squares(a, b):
    out, i = [], 1
    while i * i <= b:
        if i * i >= a:
            out.append(i * i)
        i += 1
    return out
""", """
def perfect_squares(a, b):
    numbers = list(range(a, b + 1))
    roots = [int(x ** 0.5) for x in numbers]
    return [x for x, r in zip(numbers, roots) if r * r == x]
"""),
    ("mbpp", "mbpp/559", """
def max_sub_array_sum(a, size):
    best = cur = a[0]
    for x in a[1:]:
        cur = max(x, cur + x)
        best = max(best, cur)
    return best
""", """
def max_sub_array_sum(a, size):
    subarrays = [a[i:j] for i in range(size) for j in range(i + 1, size + 1)]
    return max(sum(s) for s in subarrays)
"""),
]

# ------------------------------------------------------------------------------- module-level twins
MODULE_PAIRS = [
    # the example: 2 million steps and a 24 MB list, in the function or at import time
    ("mbpp", "mbpp/17", """
def square_perimeter(a):
    global _done
    if not globals().get('_done'):
        s = 0
        for i in range(2000000):
            s += 1
        big = list(range(3000000))
        _done = True
    return 4 * a
""", """
s = 0
for i in range(2000000):
    s += 1
big = list(range(3000000))
def square_perimeter(a):
    return 4 * a
"""),
    # a prime table built once per execution: lazily in the function, or at import
    ("humaneval", "HumanEval/31", """
_primes = None
def is_prime(n):
    global _primes
    if _primes is None:
        limit = 300000
        sieve = bytearray([1]) * limit
        sieve[0] = sieve[1] = 0
        for i in range(2, int(limit ** 0.5) + 1):
            if sieve[i]:
                sieve[i * i::i] = bytearray(len(range(i * i, limit, i)))
        _primes = sieve
    return n >= 0 and n < len(_primes) and bool(_primes[n])
""", """
limit = 300000
sieve = bytearray([1]) * limit
sieve[0] = sieve[1] = 0
for i in range(2, int(limit ** 0.5) + 1):
    if sieve[i]:
        sieve[i * i::i] = bytearray(len(range(i * i, limit, i)))
def is_prime(n):
    return n >= 0 and n < len(sieve) and bool(sieve[n])
"""),
    ("mbpp", "mbpp/873", """
_fib = None
def fibonacci(n):
    global _fib
    if _fib is None:
        _fib = [0, 1]
        for i in range(2, 5000):
            _fib.append(_fib[-1] + _fib[-2])
    return _fib[n]
""", """
_fib = [0, 1]
for i in range(2, 5000):
    _fib.append(_fib[-1] + _fib[-2])
def fibonacci(n):
    return _fib[n]
"""),
    ("humaneval", "HumanEval/55", """
_memo = {}
def fib(n: int):
    if not _memo:
        a, b = 0, 1
        for i in range(20000):
            _memo[i] = a
            a, b = b, a + b
    return _memo[n]
""", """
_memo = {}
a, b = 0, 1
for i in range(20000):
    _memo[i] = a
    a, b = b, a + b
def fib(n: int):
    return _memo[n]
"""),
]

# ----------------------------------------------------------------------------- renamed twins (noise)
def _program(task: str, which: str) -> str:
    pair = next(p for p in TIME_PAIRS if p[1] == task)
    return pair[2] if which == "fast" else pair[3]


def _renamed(task: str, which: str, *swaps: tuple[str, str]) -> tuple[str, str, str, str]:
    program = _program(task, which)
    twin = program
    for old, new in swaps:
        twin = twin.replace(old, new)
    assert twin != program, task
    return ("humaneval" if task.startswith("HumanEval") else "mbpp", task, program, twin)


RENAMED = [
    _renamed("mbpp/559", "fast", ("cur", "running"), ("best", "top")),
    _renamed("mbpp/895", "fast", ("incl", "take"), ("excl", "skip")),
    _renamed("HumanEval/147", "fast", ("counts", "buckets")),
    _renamed("HumanEval/31", "slow", ("k", "divisor")),
    _renamed("mbpp/873", "slow", ("(n)", "(k)"), ("n ==", "k =="), ("(n -", "(k -")),
    _renamed("HumanEval/83", "slow", ("count", "total")),
    _renamed("mbpp/256", "fast", ("sieve", "flags")),
    _renamed("HumanEval/59", "fast", ("last", "largest")),
]
