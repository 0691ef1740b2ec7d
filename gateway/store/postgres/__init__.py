"""The PostgreSQL backend: every statement of SQL the gateway runs on PostgreSQL."""
