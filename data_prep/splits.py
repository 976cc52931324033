"""The stable hash split every demo corpus uses: 90% / 5% / 5% by a hash of a key."""


def split_of(hash_value, names):
    """``names[0]`` if ``hash_value % 100 < 90``, ``names[1]`` if ``< 95``, else ``names[2]``."""
    bucket = hash_value % 100
    if bucket < 90:
        return names[0]
    return names[1] if bucket < 95 else names[2]


def split_by_hash(items, names, caps=None):
    """Splits items (with a ``hash_value``) and keeps each split in ascending hash order.

    Args:
      items: objects with an integer ``hash_value``.
      names: the three split names (train, validation, test).
      caps: optional dict split -> the most items to keep (None or missing: all); the
        kept items are those with the smallest hashes, so a capped split is a prefix.

    Returns:
      A dict split -> list of items (ties keep input order).
    """
    caps = caps or {}
    splits = {name: [] for name in names}
    for item in items:
        splits[split_of(item.hash_value, names)].append(item)
    for name, members in splits.items():
        members.sort(key=lambda item: item.hash_value)
        if caps.get(name) is not None:
            del members[caps[name] :]
    return splits
