"""The results of a storage check and the reference points they are judged against."""
