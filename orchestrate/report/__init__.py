"""What a person sees of a campaign: the live progress output of a run and the status report."""
