"""Files a user uploads: the original bytes in a store (the data dir or an S3 bucket), their type sniffed
from the content, and the text read from them (in this process for plain text, in the sandbox for
documents) kept beside them for chats and knowledge collections."""
