"""Eligibility audit: which source items can be perturbed, and why not (quarantine reasons).

It runs before anything else touches an item.
"""
