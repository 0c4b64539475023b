"""Instance-wide settings an admin changes at run time (sign-up, hosts tools may reach)."""
