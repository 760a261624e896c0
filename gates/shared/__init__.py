"""What the gates share and nothing else imports from the engine side: the Verdict record, the common
main(), and markdown link parsing."""
