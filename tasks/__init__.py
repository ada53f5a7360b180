"""clarifyflow: the work itself, by concern. Flows in ``flows/`` stay thin and call into here."""
