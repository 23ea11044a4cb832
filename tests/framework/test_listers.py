"""RevisionedStore: the revision grows with each change, and the journal of changed
objects lets a reader catch up without a pass over the whole store."""

from __future__ import annotations

from ksched.framework.listers import RevisionedStore


def test_changes_since_lists_the_objects_changed_in_order() -> None:
    store: RevisionedStore[str] = RevisionedStore()
    assert store.changes_since(0) == []
    store["a"] = "A"
    store.bump("A")  # an add handler: (new)
    start = store.revision
    store["b"] = "B"
    store.bump("B")
    store["a"] = "A2"
    store.bump("A", "A2")  # an update handler: (old, new)
    del store["b"]
    store.bump("B")  # a delete handler: (old)
    assert store.changes_since(start) == ["B", "A2", "B"]
    assert store.changes_since(store.revision) == []
    assert store.changes_since(0) == ["A", "B", "A2", "B"]


def test_a_change_without_its_object_or_beyond_the_journal_means_reread() -> None:
    store: RevisionedStore[str] = RevisionedStore()
    store.bump("x")
    store.bump()  # who changed is unknown
    assert store.changes_since(0) is None
    big: RevisionedStore[int] = RevisionedStore()
    for i in range(RevisionedStore.JOURNAL + 5):
        big.bump(i)
    assert big.changes_since(0) is None  # forgotten
    assert big.changes_since(big.revision - 2) == [
        RevisionedStore.JOURNAL + 3,
        RevisionedStore.JOURNAL + 4,
    ]
