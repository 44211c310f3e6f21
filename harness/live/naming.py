"""Names a snapshot gives what it writes: scenario names must be DNS labels (workloads) or
subdomains (usage entries) and unique in the file, while a cluster's names are unique only
per namespace and may be longer. Each name is the cluster's own where it can be, else a
cleaned, shortened one with a digest of the original, so different objects stay apart."""

from __future__ import annotations

import hashlib

from harness.k8s.rules import is_dns_label, is_dns_subdomain

MAX_LABEL = 63


def unique_subdomain(base: str, taken: set[str]) -> str:
    """`base` (or its cleaned form), else `base.2`, `base.3`, ...; added to `taken`."""
    name = base if is_dns_subdomain(base) else _cleaned(base, ".", 200)
    return _unique(name, taken, ".")


def unique_label(base: str, taken: set[str]) -> str:
    """A DNS label of at most 63 characters: `base`, else `base-2`, ...; added to `taken`."""
    name = base if is_dns_label(base) and len(base) <= MAX_LABEL - 4 else _cleaned(base, "-", 50)
    return _unique(name, taken, "-")


def _unique(name: str, taken: set[str], sep: str) -> str:
    candidate, index = name, 1
    while candidate in taken:
        index += 1
        candidate = f"{name}{sep}{index}"
    taken.add(candidate)
    return candidate


def _cleaned(text: str, sep: str, limit: int) -> str:
    """Lowercase alphanumeric parts joined by `sep`, cut to `limit`, plus a digest of
    `text` (so two long names that share a prefix stay different)."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    parts = []
    for part in text.lower().replace("/", ".").split("."):
        cleaned = "".join(c if c.isascii() and (c.isalnum() or c == "-") else "-" for c in part)
        if cleaned.strip("-"):
            parts.append(cleaned.strip("-"))
    body = sep.join(parts)[:limit].strip("-.")
    return f"{body}{sep}{digest}" if body else digest
