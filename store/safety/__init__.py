"""Making store text safe to show: secrets redacted, credential shapes hidden, control
characters made visible."""
