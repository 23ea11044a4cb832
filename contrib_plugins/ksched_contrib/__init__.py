"""ksched-contrib: plugins shipped apart from ksched; ksched never imports this package."""
