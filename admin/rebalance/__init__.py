"""``bkctl cluster rebalance``: even out the bytes the bookies store, relative to their capacity.

- ``inputs.py``: what each bookie stores and can give, from its storage view and the metadata;
- ``plan.py``: the moves, greedy from the fullest bookie to the emptiest, and each bookie's predicted bytes;
- execution is bookie/client/move.py's ``ReplicaMover``, under the cluster's ``MovementLock``.
"""
