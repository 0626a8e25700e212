"""Finding ``old_string`` in a file the way a careful human would, and never in the wrong place.

Models send imperfect ``old_string``s. Each tier forgives one kind of imperfection and is tried
only when the stricter tiers found nothing. A tier finds *all* its matches in its own normalised
space; more than one without ``replace_all`` is an ambiguity error, never a guess. No tier
compares by similarity: every tier requires the same non-whitespace characters in the same order
(up to escapes and typographic punctuation), which is what keeps wrong edits at zero.

All offsets are in LF-normalised text (``TextFile.text``). The modules, by concern:
``lines`` (spans and the window search), ``tiers`` (the tiers and the pipeline),
``indentation`` (the indentation tier), ``continuation`` (the mid-line rule for new_string's
continuation lines), ``gutter`` (view's line numbers copied into old_string), ``errors`` (not
found, ambiguous), ``edits`` (planning and applying edits to a file).
"""

from .edits import EditOutcome, EditPlan, EditRequest, apply_edits, apply_plan, plan_edit
from .errors import AmbiguousEdit, EditError, NotFoundInFile, ambiguous, closest_region, not_found
from .lines import MatchResult, Replacement, Text
from .tiers import find, fold_punctuation, unescape

__all__ = [
    "AmbiguousEdit",
    "EditError",
    "EditOutcome",
    "EditPlan",
    "EditRequest",
    "MatchResult",
    "NotFoundInFile",
    "Replacement",
    "Text",
    "ambiguous",
    "apply_edits",
    "apply_plan",
    "closest_region",
    "find",
    "fold_punctuation",
    "not_found",
    "plan_edit",
    "unescape",
]
