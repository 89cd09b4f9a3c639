"""The request layer: what the user typed, parsed and checked before any law runs.

:mod:`~vmemplan.request.flags` parses the structured engine flags (``--speculative-config``,
``--limit-mm-per-prompt``) into the plain values the laws take.
"""
