"""CausalDPO against DPO and S-DPO on a synthetic recommendation world with confounders."""
