from .base_code_executor import BaseCodeExecutor
from .code_execution_utils import CodeExecutionInput, CodeExecutionResult, File

__all__ = ["BaseCodeExecutor", "CodeExecutionInput", "CodeExecutionResult", "File"]
