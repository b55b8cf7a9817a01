"""Skip markers for tests that need ops other branches add (they run once merged)."""
import pytest

import lazyscope


def needs_op(*names):
    """Skips unless every ``lazyscope.<name>`` exists."""
    missing = [n for n in names if not hasattr(lazyscope, n)]
    return pytest.mark.skipif(bool(missing), reason=f"needs lazyscope.{', '.join(missing)} (another branch)")


def needs_method(*names):
    """Skips unless every ``Tensor.<name>`` exists."""
    missing = [n for n in names if not hasattr(lazyscope.Tensor, n)]
    return pytest.mark.skipif(bool(missing), reason=f"needs Tensor.{', '.join(missing)} (another branch)")
