"""The schema, the engines and the migrations: tables, opening a store, bringing it up to date."""
