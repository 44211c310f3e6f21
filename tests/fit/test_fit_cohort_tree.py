"""Kueue's quota arithmetic in cohort trees: the hierarchical cases of Kueue v0.19.2's
pkg/cache/scheduler/resource_test.go (TestAvailable), with its expected amounts, and the
borrowing height of classical/hierarchical_preemption.go worked out by hand."""

from __future__ import annotations

from fractions import Fraction

from harness.fit.cohort import QuotaBook
from harness.fit.cohort_tree import COHORT, CQ
from harness.scenario.model import ClusterQueue, Cohort, FlavorQuotas, ResourceGroup, ResourceQuota

CPU = ("red", "cpu")


def group(nominal: int, borrowing: int | None = None, lending: int | None = None) -> ResourceGroup:
    def frac(v: int | None) -> Fraction | None:
        return None if v is None else Fraction(v)

    quota = ResourceQuota("cpu", Fraction(nominal), frac(borrowing), frac(lending))
    return ResourceGroup(("cpu",), (FlavorQuotas("red", (quota,)),))


def queue(name: str, cohort: str, nominal: int, **limits: int) -> ClusterQueue:
    return ClusterQueue(name, (group(nominal, **limits),), cohort=cohort)


def cohort(name: str, parent: str | None = None, *groups: ResourceGroup) -> Cohort:
    return Cohort(name, parent, tuple(groups))


def amounts(book: QuotaBook, *names: str) -> list[tuple[int, int]]:
    """(available, potential) in milli-cpu per ClusterQueue."""
    return [(book.available(n, CPU), book.potential(n, CPU)) for n in names]


def test_hierarchical_cohort() -> None:
    # root -> left -> cq1, root -> right -> cq2; left and right hold 10 cpu each.
    book = QuotaBook.of(
        [queue("cq1", "left", 10), queue("cq2", "right", 10, lending=0)],
        [cohort("root"), cohort("left", "root", group(10)), cohort("right", "root", group(10))],
    )
    book.add("cq1", {CPU: 10_000})
    book.add("cq2", {CPU: 5_000})
    assert amounts(book, "cq1", "cq2") == [(20_000, 30_000), (25_000, 40_000)]


def test_hierarchical_cohort_respects_borrowing_limit() -> None:
    book = QuotaBook.of(
        [
            queue("left-cq1", "left", 10),
            queue("left-cq2", "left", 10, borrowing=5),
            queue("right-cq", "right", 10),
        ],
        [
            cohort("root"),
            cohort("left", "root", group(10, borrowing=5)),
            cohort("right", "root", group(10)),
        ],
    )
    assert amounts(book, "left-cq1", "left-cq2", "right-cq") == [
        (35_000, 35_000),
        (15_000, 15_000),
        (50_000, 50_000),
    ]


def test_hierarchical_cohort_respects_lending_limit() -> None:
    book = QuotaBook.of(
        [
            queue("left-cq1", "left", 10, lending=5),
            queue("left-cq2", "left", 10),
            queue("right-cq", "right", 0),
            queue("root-cq", "root", 0),
        ],
        [
            cohort("root"),
            cohort("left", "root", group(0, lending=5)),
            cohort("right", "root", group(0)),
        ],
    )
    assert amounts(book, "left-cq1", "left-cq2", "right-cq", "root-cq") == [
        (20_000, 20_000),
        (15_000, 15_000),
        (5_000, 5_000),
        (5_000, 5_000),
    ]


def test_cohort_usage_is_what_children_use_beyond_local_quota() -> None:
    book = QuotaBook.of(
        [queue("a", "left", 4, lending=1), queue("b", "right", 4)],
        [cohort("left", "root", group(2, lending=3)), cohort("right", "root")],
    )
    # left: subtree 2 + 1 = 3, all of it lendable (local max(0, 3 - 3) = 0).
    assert book.subtree_quota((COHORT, "left"), CPU) == 3_000
    assert book.subtree_quota((COHORT, "root"), CPU) == 7_000
    book.add("a", {CPU: 5_000})  # 3 local to a, 2 beyond
    assert book.node_usage((COHORT, "left"), CPU) == 2_000
    assert book.node_usage((COHORT, "root"), CPU) == 2_000
    book.add("a", {CPU: 5_000}, -1)
    assert book.node_usage((COHORT, "root"), CPU) == 0


def test_borrowing_height_counts_the_levels_up_to_the_subtree_that_fits() -> None:
    # root(0) -> mid(4) -> leaf(0) -> cq(2): 2 fit the queue, 6 the leaf's parent.
    book = QuotaBook.of(
        [queue("cq", "leaf", 2)],
        [cohort("root"), cohort("mid", "root", group(4)), cohort("leaf", "mid")],
    )
    assert book.lowest_fitting_subtree("cq", CPU, 2_000) == (0, True)
    # 3 borrows: leaf (height 1) has 2 + 0; mid (height 2) has 6 and a parent.
    assert book.lowest_fitting_subtree("cq", CPU, 3_000) == (2, True)
    # 7 fits nowhere: the root's height, nothing to reclaim below the root.
    assert book.lowest_fitting_subtree("cq", CPU, 7_000) == (3, False)
    assert book.members("cq") == ["cq"]
    assert book.tree.path("cq") == "/root/mid/leaf/cq"
    assert book.tree.root((CQ, "cq")) == (COHORT, "root")


def test_a_parent_without_a_cohort_entry_is_an_implicit_cohort() -> None:
    book = QuotaBook.of([queue("a", "team", 4), queue("b", "other", 4)], [cohort("team", "org")])
    assert book.tree.path("a") == "/org/team/a"
    assert book.available("a", CPU) == 4_000  # "other" is a separate tree
    assert book.members("a") == ["a"] and book.members("b") == ["b"]
