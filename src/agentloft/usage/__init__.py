"""Usage per person (``usage_records``) and the budgets that bound it (``usage_budgets``)."""
