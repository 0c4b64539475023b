"""The audit trail: an append-only, hash-chained record of what people and agents did."""
