"""Runner listeners that tell the world what a turn does: the live channel and turn notices."""
