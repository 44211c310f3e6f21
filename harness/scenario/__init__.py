"""The scenario contract: YAML files (version 1 shorthand, version 2, snapshots) loaded,
validated and turned into one typed model; nothing past the loader knows which shape a file
used."""
