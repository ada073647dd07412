"""The Textual front end; it imports rmqctl, never the reverse."""
