"""Fixes ``kai explain`` offers, each proven before it is shown.

A typed reason says why a podgroup waits; a fix says what to change so that it starts. Neither the reason's
arithmetic nor a rule of thumb is trusted for that: every candidate change (``candidates``) is applied to the
inspected input as ``kai simulate --what-if`` applies it, and the real scheduler runs the next cycles on the changed
cluster (``proof``); only a change under which the podgroup starts is offered, cheapest first, within a budget of
time and candidates (``search``). Where none is proven, the search says what it tried.
"""
