"""The model-list rules of ``catalog/listing.py`` (shared by the wizard's model screen and
``vllm-wizard catalog models``): a recipe's status on a profile and the list order."""

from __future__ import annotations

import pytest

from vllm_deploy_wizard.catalog import load_catalog
from vllm_deploy_wizard.catalog.listing import (
    hardware_status,
    listing_for,
    model_rows,
    profile_selectable,
    status_of,
    status_rank,
)


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


@pytest.mark.parametrize("listing, verified, status", [
    ("available", True, "verified"), ("available", False, "available"),
    ("unlisted", True, "unlisted"), ("disabled", True, "unsupported"), ("hidden", False, "hidden"),
])
def test_the_listing_state_wins_over_the_verified_mark(listing, verified, status) -> None:
    assert status_of(listing, verified) == status


def test_statuses_on_a_restricted_profile_follow_detection(cat) -> None:
    listed = next(r for r in cat.recipes.values() if r.meta.hardware.get("xeon6") == "verified")
    other = next(r for r in cat.recipes.values() if "xeon6" not in r.meta.hardware
                 and hardware_status(cat, r, "xeon6", "xeon6")[0] == "unlisted")
    assert hardware_status(cat, listed, "xeon6") == ("verified", None)
    assert hardware_status(cat, other, "xeon6") == ("hidden", None)
    status, reason = hardware_status(cat, other, "xeon6", detected="xeon6")
    assert status == "unlisted" and "restricted profile this recipe does not list (rule H1)" in reason
    profile = cat.taxonomy.hardware_profiles["xeon6"]
    assert not profile_selectable(profile, "xeon6") and profile_selectable(profile, "xeon6", "xeon6")
    assert profile_selectable(cat.taxonomy.hardware_profiles["h200"], "h200")


def test_rows_leave_hidden_recipes_out_and_group_by_status(cat) -> None:
    rows = model_rows(cat.recipes, "xeon6", listing=listing_for(cat, "xeon6", "xeon6"))
    assert len(rows) == sum(hardware_status(cat, r, "xeon6", "xeon6")[0] != "hidden" for r in cat.recipes.values())
    ranks = [status_rank(r.status) for r in rows]
    assert ranks == sorted(ranks) and {r.status for r in rows} >= {"verified", "unlisted", "unsupported"}
    undetected = model_rows(cat.recipes, "xeon6", listing=listing_for(cat, "xeon6"))
    assert {r.status for r in undetected} <= {"verified", "available", "unsupported"} and len(undetected) < len(rows)
