"""Liu et al., the Prejudice-Caprice Framework: occupations, attribute words and templates, the risk core, the run."""
