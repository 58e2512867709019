"""The routes: the reference's sessions and their subresources, ours beside them (replies,
permission requests, transcripts), the bodies they read, the JSON they answer and its OpenAPI
shapes."""
